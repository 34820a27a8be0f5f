/**
 * Events through the official SDK on real services, as a client reads them: send, list with
 * pagination, stream as the SDK parses it, resume a stream after a disconnect (Last-Event-ID with
 * an event's id or seq, or after_seq) with no gap and no duplicate, opt-in token previews, system
 * messages. Events come in the SDK's shapes exactly (ids `sevt_`, unique across sessions), our
 * additions (seq, ...) only to a client that asks (`ext`). Steering a turn (interrupts, tool
 * answers and confirmations): events-steering.test.ts.
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isIdle, reader, result, seqOf, startEventsStack, type EventsStack } from "../../support/sdk-events.js";

let fixture: EventsStack;
let stack: EventsStack["stack"];
let sdk: EventsStack["sdk"];
let ext: EventsStack["ext"];
let sessionFor: EventsStack["sessionFor"];
let say: EventsStack["say"];
let allEvents: EventsStack["allEvents"];
let pausedOnCustomTool: EventsStack["pausedOnCustomTool"];
beforeAll(async () => {
  fixture = await startEventsStack();
  ({ stack, sdk, ext, sessionFor, say, allEvents, pausedOnCustomTool } = fixture);
});
afterAll(async () => {
  await fixture?.stop();
});

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
