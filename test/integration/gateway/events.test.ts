/**
 * Events through the official SDK on real services: send, list with pagination, stream as the
 * SDK parses it, resume a stream after a disconnect (Last-Event-ID with an event's id or seq, or
 * after_seq) with no gap and no duplicate, opt-in token previews, interrupt, and the custom tool
 * and confirmation round trips. Events come in the SDK's shapes exactly (ids `sevt_`, unique
 * across sessions), our additions (seq, ...) only to a client that asks (`ext`); an answer or a
 * confirmation naming no waiting tool use is refused and stores nothing.
 */
import Anthropic from "@anthropic-ai/sdk";
import type { BetaManagedAgentsStreamSessionEvents } from "@anthropic-ai/sdk/resources/beta/sessions/events";
import { betaTool } from "@anthropic-ai/sdk/helpers/beta/json-schema";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../../support/gateway.js";

const scenarios = [
  defineScenario("hello", [{ text: "Hello from the offline model." }], { onExhausted: "repeat-last" }),
  defineScenario("slow", [{ text: "word ".repeat(40), ttftMs: 50, tokensPerSecond: 200 }], { onExhausted: "repeat-last" }),
  defineScenario("endless", [{ text: "word ".repeat(2000), ttftMs: 20, tokensPerSecond: 100 }], { onExhausted: "repeat-last" }),
  defineScenario("weather", [
    { text: "Let me look that up.", toolUses: [{ name: "get_weather", input: { city: "Paris" } }] },
    (ctx) => ({ text: `The weather: ${ctx.lastToolResult?.content ?? "?"}` }),
  ]),
  defineScenario(
    "weather-again",
    [{ text: "Let me look that up.", toolUses: [{ name: "get_weather", input: { city: "Paris" } }] }, (ctx) => ({ text: `The weather: ${ctx.lastToolResult?.content ?? "?"}` })],
    { onExhausted: "repeat-last" },
  ),
  defineScenario("echo", [(ctx) => ({ text: `heard: ${ctx.lastUserText}` })], { onExhausted: "repeat-last" }),
  defineScenario("ask", [
    { toolUses: [{ name: "bash", input: { command: "rm -rf /tmp/x" } }] },
    (ctx) => ({ text: `tool said: ${ctx.lastToolResult?.content ?? "?"}` }),
  ]),
];

type StreamEvent = BetaManagedAgentsStreamSessionEvents;
let stack: Stack;
let sdk: Anthropic;
/** The SDK asking for our additions (MH-Extensions: true): events carry their seq. */
let ext: Anthropic;
let environmentId: string;

beforeAll(async () => {
  stack = await startStack({ scenarios });
  sdk = stack.client().sdk;
  ext = stack.client(undefined, { extensions: true }).sdk;
  environmentId = (await sdk.beta.environments.create({ name: "env" })).id;
});
afterAll(async () => {
  await stack?.stop();
});

async function sessionFor(scenario: string, tools: Anthropic.Beta.AgentCreateParams["tools"] = []): Promise<string> {
  const agent = await sdk.beta.agents.create({ name: scenario, model: "claude-sonnet-5-5", system: `[scenario:${scenario}]`, tools });
  return (await sdk.beta.sessions.create({ agent: agent.id, environment_id: environmentId })).id;
}

function say(sessionId: string, text: string): Promise<unknown> {
  return sdk.beta.sessions.events.send(sessionId, { events: [{ type: "user.message", content: [{ type: "text", text }] }] });
}

const seqOf = (e: StreamEvent): number | undefined => (e as { seq?: number }).seq;
const isIdle = (e: StreamEvent): boolean => e.type === "session.status_idle";

type Reader = (done: (e: StreamEvent, all: StreamEvent[]) => boolean) => Promise<StreamEvent[]>;

/**
 * Reads an SDK stream in steps: each call reads until `done` holds for an event (inclusive).
 * The SDK's Stream can be iterated once only, and leaving a for-await loop aborts it, so the one
 * iterator is kept across calls.
 */
function reader(stream: AsyncIterable<StreamEvent>): Reader {
  const it = stream[Symbol.asyncIterator]();
  return async (done) => {
    const seen: StreamEvent[] = [];
    for (;;) {
      const next = await it.next();
      if (next.done === true) return seen;
      seen.push(next.value);
      if (done(next.value, seen)) return seen;
    }
  };
}

async function allEvents(sessionId: string, client: Anthropic = sdk): Promise<Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent[]> {
  const out = [];
  for await (const e of client.beta.sessions.events.list(sessionId)) out.push(e);
  return out;
}

describe("streaming", () => {
  it("streams a turn live, as the SDK parses it", async () => {
    const sessionId = await sessionFor("hello");
    const stream = await ext.beta.sessions.events.stream(sessionId);
    const readStream = reader(stream);
    await say(sessionId, "hi");
    const events = await readStream(isIdle);
    expect(events.map((e) => e.type)).toEqual([
      "user.message",
      "session.status_running",
      "span.model_request_start",
      "agent.message",
      "span.model_request_end",
      "session.usage",
      "session.status_idle",
    ]);
    const message = events[3] as Anthropic.Beta.Sessions.BetaManagedAgentsAgentMessageEvent;
    expect(message.content).toEqual([{ type: "text", text: "Hello from the offline model." }]);
    expect(events.map(seqOf)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("resumes after a disconnect with Last-Event-ID: no gap, no duplicate", async () => {
    const sessionId = await sessionFor("slow");
    const first = await ext.beta.sessions.events.stream(sessionId);
    const readFirst = reader(first);
    await say(sessionId, "one");
    const before = await readFirst((_e, all) => all.length === 3);
    first.controller.abort();
    // While nobody listens: the turn ends, and another one starts.
    await stack.brain.waitFor(sessionId, (ev) => ev.some((x) => x.type === "session.status_idle"));
    await say(sessionId, "two");

    const lastSeen = seqOf(before[before.length - 1]!)!;
    const second = await ext.beta.sessions.events.stream(sessionId, {}, { headers: { "Last-Event-ID": String(lastSeen) } });
    const readSecond = reader(second);
    const after = await readSecond((_e, all) => all.filter(isIdle).length === 2);
    second.controller.abort();

    const seqs = [...before, ...after].map(seqOf);
    const stored = await allEvents(sessionId, ext);
    expect(seqs).toEqual(stored.map((e) => (e as { seq?: number }).seq));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect([...before, ...after].map((e) => e.type)).toEqual(stored.map((e) => e.type));
  });

  it("replays from ?after_seq=, then goes live", async () => {
    const sessionId = await sessionFor("hello");
    await say(sessionId, "first");
    await stack.brain.waitFor(sessionId, (ev) => ev.some((x) => x.type === "session.status_idle"));
    const stream = await ext.beta.sessions.events.stream(sessionId, {}, { query: { after_seq: 2 } });
    const readStream = reader(stream);
    const replayed = await readStream(isIdle);
    expect(replayed.map(seqOf)).toEqual([3, 4, 5, 6, 7]);
    const live = readStream(isIdle);
    await say(sessionId, "second");
    expect((await live).map(seqOf)).toEqual([8, 9, 10, 11, 12, 13, 14]);
  });

  it("sends token previews when asked: event_start, then event_delta fragments of the message", async () => {
    const sessionId = await sessionFor("slow");
    const stream = await sdk.beta.sessions.events.stream(sessionId, { event_deltas: ["agent.message"] });
    const readStream = reader(stream);
    await say(sessionId, "talk");
    const events = await readStream(isIdle);
    const start = events.findIndex((e) => e.type === "event_start");
    const message = events.findIndex((e) => e.type === "agent.message");
    const deltas = events.filter((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsDeltaEvent => e.type === "event_delta");
    expect(start).toBeGreaterThan(0);
    expect(start).toBeLessThan(message);
    expect(deltas.length).toBeGreaterThan(3);
    const opened = events[start] as Anthropic.Beta.Sessions.BetaManagedAgentsStartEvent;
    // The preview is announced under the id the stored message is served with.
    expect(opened.event).toEqual({ type: "agent.message", id: (events[message] as Anthropic.Beta.Sessions.BetaManagedAgentsAgentMessageEvent).id });
    expect(new Set(deltas.map((d) => d.event_id))).toEqual(new Set([opened.event.id]));
    const text = deltas.map((d) => d.delta.content.text).join("");
    expect(text).toBe((events[message] as Anthropic.Beta.Sessions.BetaManagedAgentsAgentMessageEvent).content.map((b) => (b.type === "text" ? b.text : "")).join(""));
    // Previews never reach the history.
    expect((await allEvents(sessionId)).some((e) => (e.type as string).startsWith("event_"))).toBe(false);
  });

  it("sends no previews to a stream that did not ask", async () => {
    const sessionId = await sessionFor("slow");
    const stream = await sdk.beta.sessions.events.stream(sessionId);
    const readStream = reader(stream);
    await say(sessionId, "talk");
    const events = await readStream(isIdle);
    expect(events.some((e) => e.type === "event_start" || e.type === "event_delta")).toBe(false);
  });
});

describe("system messages", () => {
  it("are stored as sent, start no turn, and reach the model in every later request", async () => {
    const sessionId = await sessionFor("echo");
    const sent = await sdk.beta.sessions.events.send(sessionId, { events: [{ type: "system.message", content: [{ type: "text", text: "Answer in French." }] }] });
    const [stored] = sent.data ?? [];
    expect(stored?.id).toMatch(/^sevt_/);
    expect(stored?.type === "system.message" && [Object.keys(stored).sort(), stored.content]).toEqual([["content", "id", "processed_at", "type"], [{ type: "text", text: "Answer in French." }]]);
    await expect(sdk.beta.sessions.events.send(sessionId, { events: [{ type: "system.message", content: [] }] })).rejects.toThrow(/events\[0\]\.content/);
    await say(sessionId, "bonjour");
    const events = await stack.brain.waitFor(sessionId, (ev) => ev.some((x) => x.type === "agent.message") && ev.at(-1)?.type === "session.status_idle");
    // No turn of its own: the only run is the message's.
    expect(events.filter((e) => e.type === "session.status_running")).toHaveLength(1);
    const listed = await allEvents(sessionId);
    expect(listed.map((e) => e.type).slice(0, 2)).toEqual(["system.message", "user.message"]);
    const answer = listed.find((e) => e.type === "agent.message");
    expect(answer?.type === "agent.message" && answer.content).toEqual([{ type: "text", text: "heard: <system-message>\nAnswer in French.\n</system-message>\nbonjour" }]);
  });
});

describe("listing", () => {
  it("pages through a session's events with the SDK's cursor, in both orders and by type", async () => {
    const sessionId = await sessionFor("hello");
    await say(sessionId, "one");
    await stack.brain.waitFor(sessionId, (ev) => ev.filter((x) => x.type === "session.status_idle").length === 1);
    await say(sessionId, "two");
    await stack.brain.waitFor(sessionId, (ev) => ev.filter((x) => x.type === "session.status_idle").length === 2);

    const page = await sdk.beta.sessions.events.list(sessionId, { limit: 5 });
    expect(page.data).toHaveLength(5);
    expect(page.next_page).toEqual(expect.any(String));
    const seqs = [];
    for await (const e of ext.beta.sessions.events.list(sessionId, { limit: 5 })) seqs.push((e as { seq?: number }).seq);
    expect(seqs).toEqual(Array.from({ length: 14 }, (_, i) => i + 1));
    const desc = [];
    for await (const e of ext.beta.sessions.events.list(sessionId, { limit: 4, order: "desc" })) desc.push((e as { seq?: number }).seq);
    expect(desc).toEqual([...seqs].reverse());
    const messages = [];
    for await (const e of sdk.beta.sessions.events.list(sessionId, { types: ["agent.message", "user.message"], limit: 1 })) messages.push(e.type);
    expect(messages).toEqual(["user.message", "agent.message", "user.message", "agent.message"]);
    const all = await allEvents(sessionId);
    // The first turn's idle (its session.usage, appended with it, has the same time).
    const cut = all[7]!.processed_at!;
    const later = [];
    for await (const e of sdk.beta.sessions.events.list(sessionId, { "created_at[gte]": cut })) later.push(e.id);
    expect(later[0]).toBe(all.find((e) => e.processed_at === cut)!.id);
    expect(later.length).toBeLessThanOrEqual(8);
  });
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
    expect(Date.now() - sent).toBeLessThan(2000);
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

const WEATHER_TOOL: NonNullable<Anthropic.Beta.AgentCreateParams["tools"]> = [
  { type: "custom", name: "get_weather", description: "weather", input_schema: { type: "object", properties: { city: { type: "string" } } } },
];

/** A weather session paused on its custom tool use, and that event as served. */
async function pausedOnCustomTool(scenario = "weather-again"): Promise<{ sessionId: string; use: Anthropic.Beta.Sessions.BetaManagedAgentsAgentCustomToolUseEvent }> {
  const sessionId = await sessionFor(scenario, WEATHER_TOOL);
  await say(sessionId, "weather in Paris?");
  await stack.brain.waitFor(sessionId, (ev) => ev.some((x) => x.type === "session.status_idle"));
  const use = (await allEvents(sessionId)).find((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsAgentCustomToolUseEvent => e.type === "agent.custom_tool_use")!;
  return { sessionId, use };
}

const result = (id: string, text: string): Anthropic.Beta.Sessions.BetaManagedAgentsEventParams => ({
  type: "user.custom_tool_result",
  custom_tool_use_id: id,
  content: [{ type: "text", text }],
});

async function refusal(sessionId: string, events: Anthropic.Beta.Sessions.BetaManagedAgentsEventParams[]): Promise<string> {
  const err = await sdk.beta.sessions.events.send(sessionId, { events }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(Anthropic.BadRequestError);
  return (err as InstanceType<typeof Anthropic.APIError>).apiMessage ?? "";
}

describe("the SDK's shapes", () => {
  it("serves every event with a sevt_ id unique across sessions, no additions, and references that follow the ids", async () => {
    const a = await pausedOnCustomTool("weather");
    const b = await pausedOnCustomTool("weather");
    // The deterministic model names both tool uses alike; the sessions' events must not be.
    const [rawA, rawB] = [await stack.brain.waitFor(a.sessionId, () => true), await stack.brain.waitFor(b.sessionId, () => true)];
    expect(rawA.find((e) => e.type === "agent.custom_tool_use")!.id).toBe(rawB.find((e) => e.type === "agent.custom_tool_use")!.id);
    for (const s of [a, b]) await sdk.beta.sessions.events.send(s.sessionId, { events: [result(s.use.id, "sunny")] });
    for (const s of [a, b]) await stack.brain.waitFor(s.sessionId, (ev) => ev.filter((x) => x.type === "session.status_idle").length === 2);
    const [listA, listB] = [await allEvents(a.sessionId), await allEvents(b.sessionId)];
    const ids = [...listA, ...listB].map((e) => e.id);
    expect(ids.every((id) => /^sevt_[0-9A-Za-z]{26}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const e of listA) {
      expect(e, e.type).not.toHaveProperty("seq");
      expect(e, e.type).not.toHaveProperty("session_id");
      expect(e.type.startsWith("sandbox.")).toBe(false);
    }
    expect(listA.find((e) => e.type === "span.model_request_start")).not.toHaveProperty("model");
    expect(listA.find((e) => e.type === "span.model_request_end")).not.toHaveProperty("stop_reason");
    const idle = listA.find((e) => e.type === "session.status_idle")!;
    expect(idle.type === "session.status_idle" && idle.stop_reason).toEqual({ type: "requires_action", event_ids: [a.use.id] });
    const answer = listA.find((e) => e.type === "user.custom_tool_result")!;
    expect(answer.type === "user.custom_tool_result" && answer.custom_tool_use_id).toBe(a.use.id);
    const start = listA.find((e) => e.type === "span.model_request_start")!;
    const end = listA.find((e) => e.type === "span.model_request_end")!;
    expect(end.type === "span.model_request_end" && end.model_request_start_id).toBe(start.id);
  });

  it("resumes a stream from Last-Event-ID naming an event's id, as the SDK yields it", async () => {
    const { sessionId, use } = await pausedOnCustomTool();
    const all = await allEvents(sessionId);
    const from = all.findIndex((e) => e.id === use.id);
    const stream = await sdk.beta.sessions.events.stream(sessionId, {}, { headers: { "Last-Event-ID": use.id } });
    const replayed = await reader(stream)((_e, seen) => seen.length === all.length - from - 1);
    stream.controller.abort();
    expect(replayed.map((e) => (e as { id?: string }).id)).toEqual(all.slice(from + 1).map((e) => e.id));
    const err = await sdk.beta.sessions.events.stream(sessionId, {}, { headers: { "Last-Event-ID": "sevt_nothere" } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.APIError>).apiMessage).toContain("Last-Event-ID:");
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
