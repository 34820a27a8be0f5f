/** readTraceContext against Event.decode, on the bodies the log stores and on unusual encodings. */
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { describe, expect, it } from "vitest";
import { readTraceContext } from "./envelope.js";
import { Event } from "./gen/metaharness/v1/event.js";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

function event(overrides: Partial<Event>): Event {
  return Event.fromPartial({
    id: "sevt_1",
    sessionId: "sesn_1",
    type: "agent.message",
    createdAt: new Date("2026-12-02T18:00:00.123Z"),
    payload: { $case: "agentMessage", value: { content: [{ block: { $case: "text", value: { text: "x".repeat(300) } } }] } },
    ...overrides,
  });
}

/** The body as the log stores it: the event encoded without its seq, then field 3 appended. */
function stored(e: Event, seq: number): Uint8Array {
  const head = Event.encode({ ...e, seq: 0 }).finish();
  const tail = new BinaryWriter().uint32(0x18).uint64(seq).finish();
  return Buffer.concat([head, tail]);
}

function expectAsDecode(body: Uint8Array): void {
  expect(readTraceContext(body)).toEqual(Event.decode(body).traceContext);
}

describe("readTraceContext", () => {
  it("reads what Event.decode reads from stored bodies, with and without a trace context", () => {
    const bodies = [
      stored(event({ traceContext: { traceparent: TRACEPARENT, tracestate: "vendor=1" } }), 7),
      stored(event({ traceContext: { traceparent: TRACEPARENT, tracestate: "" } }), 1_000_000),
      stored(event({ traceContext: undefined }), 1),
      stored(
        event({
          type: "agent.tool_use",
          traceContext: { traceparent: TRACEPARENT, tracestate: "" },
          payload: { $case: "agentToolUse", value: { name: "bash", input: { command: "ls", n: 3, nested: { a: [1, "b"] } }, evaluatedPermission: 0, sandboxId: "" } },
        }),
        42,
      ),
    ];
    for (const body of bodies) expectAsDecode(body);
    expect(readTraceContext(bodies[0] ?? new Uint8Array())).toEqual({ traceparent: TRACEPARENT, tracestate: "vendor=1" });
    expect(readTraceContext(bodies[2] ?? new Uint8Array())).toBeUndefined();
  });

  it("takes the last of repeated occurrences, as decode does", () => {
    const first = Event.encode(event({ traceContext: { traceparent: TRACEPARENT, tracestate: "a=1" } })).finish();
    const second = Event.encode(Event.fromPartial({ traceContext: { traceparent: "", tracestate: "b=2" } })).finish();
    const body = Buffer.concat([first, second]);
    expectAsDecode(body);
    expect(readTraceContext(body)?.tracestate).toBe("b=2");
  });

  it("skips unknown fields of every wire type", () => {
    const unknown = new BinaryWriter()
      .tag(15, WireType.Varint).uint64(2n ** 60n)
      .tag(16, WireType.Bit32).fixed32(7)
      .tag(17, WireType.Bit64).fixed64(9n)
      .tag(18, WireType.LengthDelimited).bytes(new Uint8Array(1000))
      .tag(19, WireType.StartGroup).tag(1, WireType.Varint).uint32(5).tag(19, WireType.EndGroup)
      .finish();
    const body = Buffer.concat([unknown, stored(event({ traceContext: { traceparent: TRACEPARENT, tracestate: "" } }), 3)]);
    expectAsDecode(body);
    expect(readTraceContext(body)?.traceparent).toBe(TRACEPARENT);
  });

  it("stops where decode stops: at an end-group or a zero tag", () => {
    const traced = Event.encode(event({ traceContext: { traceparent: TRACEPARENT, tracestate: "" } })).finish();
    for (const stop of [new BinaryWriter().tag(20, WireType.EndGroup).finish(), new Uint8Array([0])]) {
      const body = Buffer.concat([Event.encode(event({ traceContext: undefined })).finish(), stop, traced]);
      expectAsDecode(body);
      expect(readTraceContext(body)).toBeUndefined();
    }
  });

  it("throws on bytes that are not a message, as decode does", () => {
    const body = stored(event({ traceContext: { traceparent: TRACEPARENT, tracestate: "" } }), 3);
    const cut = body.subarray(0, body.length - 200);
    expect(() => Event.decode(cut)).toThrow();
    expect(() => readTraceContext(cut)).toThrow();
  });
});
