/**
 * unsafeIntegerField names the integer the generated decoders refuse, wherever it sits: a top
 * field, an event of a list, a timestamp inside it.
 */
import { describe, expect, it } from "vitest";
import { EmitEventsRequest, WatchEventsRequest } from "./index.js";
import { unsafeIntegerField } from "./unsafe-integers.js";

/** Base-128 varint; a negative int64 as its 64-bit two's complement, as protobuf writes it. */
const varint = (n: bigint): number[] => {
  const out: number[] = [];
  let v = BigInt.asUintN(64, n);
  for (; v >= 0x80n; v >>= 7n) out.push(Number(v & 0x7fn) | 0x80);
  return [...out, Number(v)];
};
const tag = (field: number, wire: number): number => (field << 3) | wire;
const bytes = (field: number, body: Uint8Array | number[]): number[] => [tag(field, 2), ...varint(BigInt(body.length)), ...body];

describe("unsafeIntegerField", () => {
  it("names a top-level field", () => {
    const request = [...bytes(1, Buffer.from("sesn_x")), tag(2, 0), ...varint(2n ** 60n)];
    expect(unsafeIntegerField("/metaharness.v1.SessionLog/WatchEvents", Uint8Array.from(request))).toBe("after_seq");
    expect(() => WatchEventsRequest.decode(Uint8Array.from(request))).toThrow(/MAX_SAFE_INTEGER/);
  });

  it("names an event of a list, a timestamp inside it, and a negative value", () => {
    const fine = bytes(2, [...bytes(1, Buffer.from("evt_a")), tag(3, 0), ...varint(7n)]);
    const late = bytes(2, [...bytes(1, Buffer.from("evt_b")), ...bytes(5, [tag(1, 0), ...varint(-(2n ** 62n))])]);
    const request = Uint8Array.from([...bytes(1, Buffer.from("sesn_x")), ...fine, ...late]);
    expect(() => EmitEventsRequest.decode(request)).toThrow(/SAFE_INTEGER/);
    expect(unsafeIntegerField("/metaharness.v1.SessionLog/EmitEvents", request)).toBe("events[1].created_at.seconds");
  });

  it("answers undefined when every integer fits, for another method, or for bytes that do not decode", () => {
    const request = Uint8Array.from([...bytes(1, Buffer.from("sesn_x")), tag(2, 0), ...varint(2n ** 53n - 1n)]);
    expect(unsafeIntegerField("/metaharness.v1.SessionLog/WatchEvents", request)).toBeUndefined();
    expect(unsafeIntegerField("/metaharness.v1.SessionLog/NoSuchMethod", request)).toBeUndefined();
    expect(unsafeIntegerField("not a path", request)).toBeUndefined();
    expect(unsafeIntegerField("/metaharness.v1.SessionLog/WatchEvents", Uint8Array.from([tag(1, 2), 50]))).toBeUndefined();
  });
});
