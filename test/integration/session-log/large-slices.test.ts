/**
 * A slice carries at most MAX_SLICE_BYTES of events (4 MiB less 8 KiB): one of 100 large events
 * would otherwise exceed any client's receive limit (gRPC's default is 4 MiB) on every try, and a
 * reader paging through the log would be stuck there. It stops before the event that would take
 * it over, with has_more set, both ways, and always holds at least one event, however large. And
 * the largest event the log can be configured to take still fits our clients' 16 MiB messages.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Event, GetEventsResponse } from "@metaharness/proto";
import { MAX_EVENT_BYTES } from "@metaharness/service-kit/grpc";
import { loadConfig, MAX_SLICE_BYTES } from "@metaharness/session-log";
import { newSession, startTestLog, type TestLog } from "../../support/session-log.js";
import { agentMessage, textOf } from "../../support/events.js";

const GRPC_DEFAULT_RECEIVE_LIMIT = 4 * 1024 * 1024;
const LARGE = 900 * 1024;
/** Over MAX_SLICE_BYTES alone, as a log configured for payloads this large can hold. */
const HUGE = 5 * 1024 * 1024;

let log: TestLog;
let sessionId: string;
/** Each event's text, by seq - 1: one small, 9 large, one huge, one small. */
const texts = ["first", ...Array.from({ length: 9 }, (_, i) => `${i}`.repeat(LARGE)), "h".repeat(HUGE), "last"];

beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false", MH_MAX_PAYLOAD_BYTES: String(6 * 1024 * 1024) });
  sessionId = await newSession(log.client);
  // Several calls: a request is at most 16 MiB.
  for (const batch of [texts.slice(0, 5), texts.slice(5, 10), texts.slice(10)]) {
    await log.client.emitEvents({ sessionId, events: batch.map((t) => agentMessage(t)) });
  }
});
afterAll(async () => {
  await log?.stop();
});

const read = (position: { $case: "afterSeq" | "beforeSeq"; value: number }): Promise<GetEventsResponse> =>
  log.client.getEvents({ sessionId, position, limit: 100, types: [] });
const seqs = (events: Event[]): number[] => events.map((e) => e.seq);

describe("a slice's byte budget", () => {
  it("cuts a forward slice before the event that would take it over, and paging reads every event once, in order", async () => {
    const first = await read({ $case: "afterSeq", value: 0 });
    expect(seqs(first.events)).toEqual([1, 2, 3, 4, 5]);
    expect(first.hasMore).toBe(true);
    expect(GetEventsResponse.encode(first).finish().length).toBeLessThanOrEqual(GRPC_DEFAULT_RECEIVE_LIMIT);

    const pages: number[][] = [];
    const seen: Event[] = [];
    let after = 0;
    for (let more = true; more && pages.length < 20; ) {
      const r = await read({ $case: "afterSeq", value: after });
      pages.push(seqs(r.events));
      seen.push(...r.events);
      after = r.events.at(-1)?.seq ?? after;
      more = r.hasMore;
    }
    // 1 small and 4 large; 4 large (a fifth would pass the budget); 1 large; the huge one alone; the last.
    expect(pages).toEqual([[1, 2, 3, 4, 5], [6, 7, 8, 9], [10], [11], [12]]);
    expect(seen.map(textOf)).toEqual(texts);
  });

  it("cuts a backward slice keeping the events nearest before_seq", async () => {
    const r = await read({ $case: "beforeSeq", value: 11 });
    expect(seqs(r.events)).toEqual([7, 8, 9, 10]);
    expect(r.hasMore).toBe(true);
    expect(GetEventsResponse.encode(r).finish().length).toBeLessThanOrEqual(GRPC_DEFAULT_RECEIVE_LIMIT);
  });

  it("applies with a type filter too", async () => {
    const r = await log.client.getEvents({ sessionId, position: { $case: "afterSeq", value: 0 }, limit: 100, types: ["agent.message"] });
    expect(seqs(r.events)).toEqual([1, 2, 3, 4, 5]);
    expect(r.hasMore).toBe(true);
  });

  it("holds one event larger than the budget alone, both ways", async () => {
    const forward = await read({ $case: "afterSeq", value: 10 });
    expect(seqs(forward.events)).toEqual([11]);
    expect(forward.hasMore).toBe(true);
    const backward = await read({ $case: "beforeSeq", value: 12 });
    expect(seqs(backward.events)).toEqual([11]);
    expect(backward.hasMore).toBe(true);
    expect(textOf(forward.events[0])).toHaveLength(HUGE);
  });

  it("fills the budget: a cut slice's events fit in it, and with the next event they would not", async () => {
    const r = await read({ $case: "afterSeq", value: 0 });
    const next = await read({ $case: "afterSeq", value: 5 });
    const bytes = (events: Event[]): number => events.reduce((n, e) => n + Event.encode(e).finish().length, 0);
    expect(bytes(r.events)).toBeLessThanOrEqual(MAX_SLICE_BYTES);
    expect(bytes([...r.events, ...next.events.slice(0, 1)])).toBeGreaterThan(MAX_SLICE_BYTES);
  });
});

describe("the largest event the log can be configured for", () => {
  let big: TestLog;
  beforeAll(async () => {
    big = await startTestLog({ MH_RELAY_ENABLED: "false", MH_MAX_PAYLOAD_BYTES: String(MAX_EVENT_BYTES) });
  });
  afterAll(async () => {
    await big?.stop();
  });

  it("goes in and comes back whole through our gRPC clients", async () => {
    const id = await newSession(big.client);
    const text = "x".repeat(MAX_EVENT_BYTES - 1024);
    const appended = await big.client.emitEvent({ sessionId: id, event: agentMessage(text) });
    expect(appended.event?.seq).toBe(1);
    const r = await big.client.getEvents({ sessionId: id, position: { $case: "afterSeq", value: 0 }, limit: 10, types: [] });
    expect(r.events).toHaveLength(1);
    expect(textOf(r.events[0])).toBe(text);
  });

  it("is the most the configuration takes, naming the variable", () => {
    const env = { MH_SERVICE_TOKENS_FILE: "/tokens.json", MH_MAX_PAYLOAD_BYTES: String(MAX_EVENT_BYTES + 1) };
    expect(() => loadConfig(env)).toThrow(/MH_MAX_PAYLOAD_BYTES/);
    expect(loadConfig({ ...env, MH_MAX_PAYLOAD_BYTES: String(MAX_EVENT_BYTES) }).maxPayloadBytes).toBe(MAX_EVENT_BYTES);
  });
});
