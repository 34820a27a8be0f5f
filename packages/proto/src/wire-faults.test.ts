/**
 * wireFault finds what the generated decoders skip without reading: an over-long varint in an
 * unknown field, at the top and inside a nested message, a field number 0, a stray end of group;
 * and leaves well-formed requests, unknown fields included, alone.
 */
import { describe, expect, it } from "vitest";
import { CreateSessionRequest, EmitEventsRequest, Event, SessionMetadata } from "./index.js";
import { wireFault } from "./wire-faults.js";

const CREATE = "/metaharness.v1.SessionLog/CreateSession";
/** Field 15 (unknown everywhere here) as a varint of 11 bytes: ten continuation bytes, then 0x01. */
const OVERLONG = [0x78, ...Array<number>(10).fill(0x80), 0x01];
const lengthDelimited = (field: number, body: Uint8Array | number[]): number[] => [(field << 3) | 2, body.length, ...body];

describe("wireFault", () => {
  it("names an over-long varint in an unknown field, which the decoder accepts", () => {
    const request = Uint8Array.from(OVERLONG);
    expect(CreateSessionRequest.decode(request)).toEqual(CreateSessionRequest.fromPartial({}));
    expect(wireFault(CREATE, request)).toBe("field 15: a varint longer than 10 bytes");
    // Ten bytes whose last carries more than the 64th bit.
    expect(wireFault(CREATE, Uint8Array.from([0x78, ...Array<number>(9).fill(0xff), 0x02]))).toBe("field 15: a varint beyond 64 bits");
  });

  it("names it inside a known message field, and inside a list of messages", () => {
    const metadata = [...SessionMetadata.encode(SessionMetadata.fromPartial({ title: "t" })).finish(), ...OVERLONG];
    const request = Uint8Array.from(lengthDelimited(2, metadata));
    expect(CreateSessionRequest.decode(request).metadata?.title).toBe("t");
    expect(wireFault(CREATE, request)).toBe("metadata.field 15: a varint longer than 10 bytes");
    const event = [...Event.encode(Event.fromPartial({ id: "evt_a", type: "user.message" })).finish(), ...OVERLONG];
    const fine = Event.encode(Event.fromPartial({ id: "evt_b", type: "user.message" })).finish();
    const emit = Uint8Array.from([...lengthDelimited(2, fine), ...lengthDelimited(2, event)]);
    expect(EmitEventsRequest.decode(emit).events).toHaveLength(2);
    expect(wireFault("/metaharness.v1.SessionLog/EmitEvents", emit)).toBe("events.field 15: a varint longer than 10 bytes");
  });

  it("names a field number 0 (the decoder stops there) and an end of group with none open", () => {
    expect(wireFault(CREATE, Uint8Array.from([0x00, 0x01]))).toBe("a field number 0");
    expect(wireFault(CREATE, Uint8Array.from([(7 << 3) | 4]))).toBe("field 7: an end of group with no group open");
    expect(wireFault(CREATE, Uint8Array.from([(7 << 3) | 3, 0x08, 0x01]))).toBe("field 7: a group that never ends");
    expect(wireFault(CREATE, Uint8Array.from([(7 << 3) | 6]))).toBe("field 7: wire type 6, which protobuf does not have");
  });

  it("accepts well-formed requests, with unknown fields of every wire type", () => {
    const known = CreateSessionRequest.encode({ sessionId: "sesn_x", metadata: SessionMetadata.fromPartial({ labels: { a: "b" } }) }).finish();
    const unknown = [0x78, 0xff, 0x01, (12 << 3) | 1, ...Array<number>(8).fill(1), (13 << 3) | 5, 1, 2, 3, 4, ...lengthDelimited(14, [1, 2, 3])];
    const group = [(11 << 3) | 3, 0x08, 0x01, (11 << 3) | 4];
    expect(wireFault(CREATE, Uint8Array.from([...known, ...unknown, ...group]))).toBeUndefined();
    expect(wireFault(CREATE, new Uint8Array(0))).toBeUndefined();
    // A method not in the contracts: the top level is still read.
    expect(wireFault("/other.Service/Method", Uint8Array.from(OVERLONG))).toBe("field 15: a varint longer than 10 bytes");
  });
});
