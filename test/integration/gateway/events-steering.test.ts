/**
 * Steering a turn through the official SDK on real services: interrupt, the custom tool round
 * trip (by hand and with the SDK's tool runners, rich tool results included), confirmations of
 * always_ask tools, and sends the log cannot take. An answer or a confirmation naming no waiting
 * tool use is refused naming the field and stores nothing. Reading events: events.test.ts.
 */
import Anthropic from "@anthropic-ai/sdk";
import { betaTool } from "@anthropic-ai/sdk/helpers/beta/json-schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isIdle, reader, result, startEventsStack, type EventsStack } from "../../support/sdk-events.js";

let fixture: EventsStack;
let stack: EventsStack["stack"];
let sdk: EventsStack["sdk"];
let ext: EventsStack["ext"];
let sessionFor: EventsStack["sessionFor"];
let say: EventsStack["say"];
let allEvents: EventsStack["allEvents"];
let pausedOnCustomTool: EventsStack["pausedOnCustomTool"];
let refusal: EventsStack["refusal"];
beforeAll(async () => {
  fixture = await startEventsStack();
  ({ stack, sdk, ext, sessionFor, say, allEvents, pausedOnCustomTool, refusal } = fixture);
});
afterAll(async () => {
  await fixture?.stop();
});

describe("steering", () => {
  it("stops a running turn on user.interrupt", async () => {
    const sessionId = await sessionFor("endless");
    const stream = await sdk.beta.sessions.events.stream(sessionId);
    const readStream = reader(stream);
    await say(sessionId, "go on and on");
    let sent = 0;
    const events = await readStream((e) => {
      if (e.type === "span.model_request_start") {
        sent = Date.now();
        void sdk.beta.sessions.events.send(sessionId, { events: [{ type: "user.interrupt" }] });
      }
      return isIdle(e);
    });
    // At once: the endless answer would run 25 s more; 10 s is a busy machine's margin.
    expect(Date.now() - sent).toBeLessThan(10_000);
    const idle = events[events.length - 1] as Anthropic.Beta.Sessions.BetaManagedAgentsSessionStatusIdleEvent;
    // The SDK has no "interrupted": the interrupt returns control to the user, an end_turn.
    expect(idle.stop_reason).toEqual({ type: "end_turn" });
    expect(events.some((e) => e.type === "user.interrupt")).toBe(true);
    expect(events.some((e) => e.type === "agent.message")).toBe(false);
    // A client that asks for our additions sees why the turn ended.
    const extIdle = (await allEvents(sessionId, ext)).find((e) => e.id === idle.id) as { stop_reason: { type: string } } | undefined;
    expect(extIdle?.stop_reason.type).toBe("interrupted");
  });

  it("pauses on a custom tool and resumes with the client's result", async () => {
    const sessionId = await sessionFor("weather", [
      { type: "custom", name: "get_weather", description: "weather", input_schema: { type: "object", properties: { city: { type: "string" } } } },
    ]);
    const stream = await sdk.beta.sessions.events.stream(sessionId);
    const readStream = reader(stream);
    await say(sessionId, "weather in Paris?");
    const paused = await readStream(isIdle);
    const use = paused.find((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsAgentCustomToolUseEvent => e.type === "agent.custom_tool_use")!;
    expect(use).toMatchObject({ name: "get_weather", input: { city: "Paris" } });
    expect((paused[paused.length - 1] as Anthropic.Beta.Sessions.BetaManagedAgentsSessionStatusIdleEvent).stop_reason).toEqual({
      type: "requires_action",
      event_ids: [use.id],
    });
    await sdk.beta.sessions.events.send(sessionId, {
      events: [{ type: "user.custom_tool_result", custom_tool_use_id: use.id, content: [{ type: "text", text: "sunny, 21C" }] }],
    });
    const done = await readStream(isIdle);
    const answer = done.find((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsAgentMessageEvent => e.type === "agent.message")!;
    expect(answer.content).toEqual([{ type: "text", text: "The weather: sunny, 21C" }]);
  });

  it("takes a tool's search results, images and documents from the SDK's tool runner, keeps them and shows them to the model", async () => {
    const sessionId = await sessionFor("weather", [
      { type: "custom", name: "get_weather", description: "weather", input_schema: { type: "object", properties: { city: { type: "string" } } } },
    ]);
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    // Messages-API blocks, as a tool written for the Messages tool runner returns them: the
    // search result without `citations`, the image and document with Messages-only fields.
    const weather = betaTool({
      name: "get_weather",
      description: "weather",
      inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      run: () => [
        { type: "text" as const, text: "forecast follows" },
        { type: "search_result" as const, source: "https://meteo.example/paris", title: "Paris forecast", content: [{ type: "text" as const, text: "rain until noon" }] },
        { type: "image" as const, source: { type: "base64" as const, media_type: "image/png" as const, data: png }, cache_control: { type: "ephemeral" as const } },
        { type: "document" as const, source: { type: "text" as const, media_type: "text/plain" as const, data: "UV index 3" }, title: "UV", citations: { enabled: true } },
      ],
    });
    const runner = sdk.beta.sessions.events.toolRunner(sessionId, { tools: [weather], maxIdleMs: 300 });
    await say(sessionId, "weather in Paris?");
    const calls = [];
    for await (const call of runner) calls.push(call);
    expect(calls.map((c) => c.isError)).toEqual([false]);
    const stored = await allEvents(sessionId);
    const result = stored.find((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsUserCustomToolResultEvent => e.type === "user.custom_tool_result");
    expect(result?.content).toEqual([
      { type: "text", text: "forecast follows" },
      { type: "search_result", source: "https://meteo.example/paris", title: "Paris forecast", content: [{ type: "text", text: "rain until noon" }], citations: { enabled: false } },
      { type: "image", source: { type: "base64", media_type: "image/png", data: png } },
      { type: "document", source: { type: "text", media_type: "text/plain", data: "UV index 3" }, title: "UV" },
    ]);
    // The model got every block (the offline model reads a search result by title and text).
    const answer = stored.filter((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsAgentMessageEvent => e.type === "agent.message").pop();
    expect(answer?.content).toEqual([
      { type: "text", text: "The weather: forecast follows\n[search_result: Paris forecast (https://meteo.example/paris)] rain until noon\n[image]\n[document]" },
    ]);
  });

  it("serves the SDK's own session tool runner (live stream plus history) for custom tools", async () => {
    const sessionId = await sessionFor("weather", [
      { type: "custom", name: "get_weather", description: "weather", input_schema: { type: "object", properties: { city: { type: "string" } } } },
    ]);
    const weather = betaTool({
      name: "get_weather",
      description: "weather",
      inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      run: (input) => `rainy in ${input.city}`,
    });
    const runner = sdk.beta.sessions.events.toolRunner(sessionId, { tools: [weather], maxIdleMs: 300 });
    await say(sessionId, "weather in Paris?");
    const calls = [];
    for await (const call of runner) calls.push(call);
    expect(calls.map((c) => [c.event.type, c.event.name, c.isError])).toEqual([["agent.custom_tool_use", "get_weather", false]]);
    const stored = await allEvents(sessionId);
    const answer = stored.filter((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsAgentMessageEvent => e.type === "agent.message").pop();
    expect(answer?.content).toEqual([{ type: "text", text: "The weather: rainy in Paris" }]);
  });

  it("asks before an always_ask tool and reports the user's denial to the model", async () => {
    const sessionId = await sessionFor("ask", [
      { type: "agent_toolset_20260401", configs: [{ name: "bash", permission_policy: { type: "always_ask" } }] },
    ]);
    const stream = await sdk.beta.sessions.events.stream(sessionId);
    const readStream = reader(stream);
    await say(sessionId, "clean up");
    const paused = await readStream(isIdle);
    const use = paused.find((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsAgentToolUseEvent => e.type === "agent.tool_use")!;
    expect(use).toMatchObject({ name: "bash", evaluated_permission: "ask" });
    await sdk.beta.sessions.events.send(sessionId, {
      events: [{ type: "user.tool_confirmation", tool_use_id: use.id, result: "deny", deny_message: "not on my machine" }],
    });
    const done = await readStream(isIdle);
    const answer = done.find((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsAgentMessageEvent => e.type === "agent.message")!;
    expect(answer.content).toEqual([{ type: "text", text: "tool said: the user denied this tool call: not on my machine" }]);
  });

  it("refuses sends it cannot append, naming the field", async () => {
    const sessionId = await sessionFor("hello");
    const cases: Array<[unknown, string]> = [
      [{ type: "user.message", content: [] }, "events[0].content"],
      [{ type: "agent.message", content: [{ type: "text", text: "x" }] }, "events[0].type"],
      [{ type: "user.tool_result", tool_use_id: "toolu_1" }, "events[0].type"],
      [{ type: "user.tool_confirmation", tool_use_id: "t", result: "maybe" }, "events[0].result"],
    ];
    for (const [event, field] of cases) {
      const err = await sdk.beta.sessions.events
        .send(sessionId, { events: [event as Anthropic.Beta.Sessions.BetaManagedAgentsEventParams] })
        .catch((e: unknown) => e);
      expect(err, field).toBeInstanceOf(Anthropic.BadRequestError);
      expect((err as InstanceType<typeof Anthropic.APIError>).apiMessage).toContain(`${field}:`);
    }
    expect(await allEvents(sessionId)).toEqual([]);
  });
});

describe("answers that name no waiting tool use", () => {
  it("are refused with the field named, store nothing, and the session takes its next turns", async () => {
    const { sessionId, use } = await pausedOnCustomTool();
    const before = (await allEvents(sessionId)).length;
    expect(await refusal(sessionId, [result("sevt_01JZ8Q4D3M5X6V7B8N9P0R1S2T", "stray")])).toMatch(/^events\[0\]\.custom_tool_use_id: /);
    expect(await refusal(sessionId, [result("toolu_unknown", "stray")])).toMatch(/^events\[0\]\.custom_tool_use_id: /);
    // The custom tool asks for no confirmation.
    expect(await refusal(sessionId, [{ type: "user.tool_confirmation", tool_use_id: use.id, result: "allow" }])).toMatch(/^events\[0\]\.tool_use_id: .*confirmation/);
    // Two answers to one call in one request: the whole request is refused.
    expect(await refusal(sessionId, [result(use.id, "one"), result(use.id, "two")])).toMatch(/^events\[1\]\.custom_tool_use_id: /);
    expect(await allEvents(sessionId)).toHaveLength(before);

    await sdk.beta.sessions.events.send(sessionId, { events: [result(use.id, "sunny")] });
    await stack.brain.waitFor(sessionId, (ev) => ev.filter((x) => x.type === "session.status_idle").length === 2);
    const answered = (await allEvents(sessionId)).length;
    expect(await refusal(sessionId, [result(use.id, "again")])).toMatch(/already answered/);
    expect(await allEvents(sessionId)).toHaveLength(answered);

    // The next turn asks again and is answered: nothing stray reached the model.
    await say(sessionId, "and tomorrow?");
    await stack.brain.waitFor(sessionId, (ev) => ev.filter((x) => x.type === "session.status_idle").length === 3);
    const last = (await allEvents(sessionId)).filter((e) => e.type === "session.status_idle").at(-1)!;
    expect(last.type === "session.status_idle" && last.stop_reason.type).toBe("end_turn");
  });

  it("refuse a second confirmation of one tool use", async () => {
    const sessionId = await sessionFor("ask", [{ type: "agent_toolset_20260401", configs: [{ name: "bash", permission_policy: { type: "always_ask" } }] }]);
    await say(sessionId, "clean up");
    await stack.brain.waitFor(sessionId, (ev) => ev.some((x) => x.type === "session.status_idle"));
    const use = (await allEvents(sessionId)).find((e) => e.type === "agent.tool_use")!;
    const deny: Anthropic.Beta.Sessions.BetaManagedAgentsEventParams = { type: "user.tool_confirmation", tool_use_id: use.id, result: "deny" };
    expect(await refusal(sessionId, [deny, deny])).toMatch(/^events\[1\]\.tool_use_id: /);
    await sdk.beta.sessions.events.send(sessionId, { events: [deny] });
    await stack.brain.waitFor(sessionId, (ev) => ev.filter((x) => x.type === "session.status_idle").length === 2);
    expect(await refusal(sessionId, [deny])).toMatch(/^events\[0\]\.tool_use_id: /);
  });
});
