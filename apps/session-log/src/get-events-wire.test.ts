import { describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import { Event, GetEventsResponse } from "@metaharness/proto";
import { serializeGetEventsResponse, storedGetEventsResponse } from "./get-events-wire.js";

function stored(seq: number, text: string): Uint8Array {
  const event = newEvent("agent.message", { content: [{ block: { $case: "text", value: { text } } }] });
  // As mh_append stores it: encoded without its seq, then field 3 appended.
  const body = Event.encode({ ...event, sessionId: "sesn_wire", createdAt: new Date(1_700_000_000_000), seq: 0 }).finish();
  return Buffer.concat([body, Buffer.from([0x18]), varint(seq)]);
}

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return Buffer.from(out);
}

describe("GetEvents on the wire", () => {
  it("frames stored bodies into a message any decoder reads as the events", () => {
    // 300 bytes of text makes bodies whose length takes a two-byte varint.
    const bodies = [stored(41, "short"), stored(42, "x".repeat(300)), stored(1_000_000, "far")];
    const response = storedGetEventsResponse(bodies, 1_000_007, true);
    const decoded = GetEventsResponse.decode(serializeGetEventsResponse(response));
    expect(decoded.lastSeq).toBe(1_000_007);
    expect(decoded.hasMore).toBe(true);
    expect(decoded.events).toEqual(bodies.map((b) => Event.decode(b)));
    expect(decoded.events.map((e) => e.seq)).toEqual([41, 42, 1_000_000]);
    // In-process readers of the response object see the same events.
    expect(response.events).toEqual(decoded.events);
  });

  it("serializes an empty slice and ordinary responses as the generated code does", () => {
    const empty = storedGetEventsResponse([], 5, false);
    expect(GetEventsResponse.decode(serializeGetEventsResponse(empty))).toEqual({ events: [], lastSeq: 5, hasMore: false });
    const plain: GetEventsResponse = { events: [Event.decode(stored(1, "a"))], lastSeq: 1, hasMore: false };
    expect(serializeGetEventsResponse(plain)).toEqual(Buffer.from(GetEventsResponse.encode(plain).finish()));
  });
});
