import { describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import { AcquireLeaseResponse, DeltaKind, EmitEventResponse, EmitEventsResponse, Event, GetEventsResponse, WatchEventsResponse } from "@metaharness/proto";
import {
  serializeEmitEventResponse,
  serializeEmitEventsResponse,
  serializeGetEventsResponse,
  serializeWatchEventsResponse,
  serializeAcquireLeaseResponse,
  storedAcquireLeaseResponse,
  storedEmitEventResponse,
  storedEmitEventsResponse,
  storedGetEventsResponse,
  storedWatchEventResponse,
  withSeq,
} from "./stored-wire.js";

/** An event as mh_append stores it: encoded without its seq, then field 3 appended. */
function stored(seq: number, text: string): Uint8Array {
  const event = newEvent("agent.message", { content: [{ block: { $case: "text", value: { text } } }] });
  const body = Event.encode({ ...event, sessionId: "sesn_wire", createdAt: new Date(1_700_000_000_000), seq: 0 }).finish();
  return withSeq(body, seq);
}

// 300 bytes of text make a body whose length takes a two-byte varint; 2^35 needs a six-byte seq.
const SEQS = [41, 42, 2 ** 35];
const bodies = [stored(SEQS[0]!, "short"), stored(SEQS[1]!, "x".repeat(300)), stored(SEQS[2]!, "far")];
const events = bodies.map((b) => Event.decode(b));

describe("responses from stored events", () => {
  it("withSeq appends the seq any decoder reads", () => {
    expect(events.map((e) => e.seq)).toEqual(SEQS);
    expect(events[1]?.sessionId).toBe("sesn_wire");
  });

  it("GetEvents: the bodies framed as events, then last_seq and has_more", () => {
    const response = storedGetEventsResponse(bodies, 1_000_007, true);
    const decoded = GetEventsResponse.decode(serializeGetEventsResponse(response));
    expect(decoded).toEqual({ events, lastSeq: 1_000_007, hasMore: true });
    // In-process readers of the response object see the same events.
    expect(response.events).toEqual(events);
    const empty = storedGetEventsResponse([], 5, false);
    expect(GetEventsResponse.decode(serializeGetEventsResponse(empty))).toEqual({ events: [], lastSeq: 5, hasMore: false });
  });

  it("EmitEvent and EmitEvents: the bodies framed as the event(s), then the rest", () => {
    const one = storedEmitEventResponse(events[1]!, bodies[1]!, true);
    expect(EmitEventResponse.decode(serializeEmitEventResponse(one))).toEqual({ event: events[1], duplicate: true });
    const many = storedEmitEventsResponse(events, bodies, 2, 1834);
    expect(EmitEventsResponse.decode(serializeEmitEventsResponse(many))).toEqual({ events, duplicates: 2, leaseLeftMs: 1834 });
  });

  it("WatchEvents: the body framed as the event", () => {
    const one = storedWatchEventResponse(events[2]!, bodies[2]!);
    expect(WatchEventsResponse.decode(serializeWatchEventsResponse(one))).toEqual({ event: events[2], delta: undefined, deltas: [] });
  });

  it("AcquireLease: the lease and the session, then the bodies framed as its events (field 3)", () => {
    const lease = { holder: "harness-1", epoch: 7, expiresAt: new Date(1_700_000_003_000) };
    const session = { sessionId: "sesn_wire", metadata: undefined, status: 1, lastSeq: 3, lease, createdAt: new Date(1_700_000_000_000), updatedAt: new Date(1_700_000_001_000) };
    const response = storedAcquireLeaseResponse(lease, session, bodies);
    expect(AcquireLeaseResponse.decode(serializeAcquireLeaseResponse(response))).toEqual({ lease, session, events });
    expect(response.events).toEqual(events);
    const none = storedAcquireLeaseResponse(lease, session, []);
    expect(AcquireLeaseResponse.decode(serializeAcquireLeaseResponse(none))).toEqual({ lease, session, events: [] });
  });

  it("serializes responses made elsewhere exactly as the generated code does", () => {
    const plain: GetEventsResponse = { events: [events[0]!], lastSeq: 1, hasMore: false };
    expect(serializeGetEventsResponse(plain)).toEqual(Buffer.from(GetEventsResponse.encode(plain).finish()));
    const emitted: EmitEventResponse = { event: events[0], duplicate: false };
    expect(serializeEmitEventResponse(emitted)).toEqual(Buffer.from(EmitEventResponse.encode(emitted).finish()));
    const delta: WatchEventsResponse = {
      event: undefined,
      delta: { sessionId: "sesn_wire", modelRequestId: "x", blockIndex: 0, kind: DeltaKind.DELTA_KIND_TEXT, text: "hi", emittedAt: new Date(1_700_000_000_000) },
      deltas: [],
    };
    expect(serializeWatchEventsResponse(delta)).toEqual(Buffer.from(WatchEventsResponse.encode(delta).finish()));
    const batch: WatchEventsResponse = { event: undefined, delta: undefined, deltas: [delta.delta!, { ...delta.delta!, text: " there" }] };
    expect(serializeWatchEventsResponse(batch)).toEqual(Buffer.from(WatchEventsResponse.encode(batch).finish()));
  });
});
