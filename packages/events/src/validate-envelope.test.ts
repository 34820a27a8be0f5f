/** validateEventForAppend: the envelope, normalization and the size limit. */
import { Event } from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import { newEvent } from "./event.js";
import { EVENT_TYPES } from "./registry.js";
import { PAYLOADS, text } from "./testing/fixtures.js";
import { invalidField, thrown } from "./testing/errors.js";
import { DEFAULT_MAX_EVENT_BYTES, validateEventForAppend } from "./validate/append.js";
import { MAX_INPUT_DEPTH } from "./validate/struct.js";

const opts = { maxPayloadBytes: DEFAULT_MAX_EVENT_BYTES };
const message = (): Event => newEvent("user.message", { content: [text("hi")] });

describe("validateEventForAppend", () => {
  it("accepts a valid event of every type", () => {
    for (const type of EVENT_TYPES) {
      const event = newEvent(type, PAYLOADS[type]);
      const out = validateEventForAppend(event, opts);
      expect(out.event).toEqual(event);
      expect(Event.decode(out.encoded)).toEqual(event);
    }
  });

  it("derives the type and assigns an id, on a copy, and encodes the result once", () => {
    const event = { ...message(), id: "", type: "" };
    const { event: out, encoded } = validateEventForAppend(event, opts);
    expect(out.type).toBe("user.message");
    expect(out.id).toMatch(/^sevt_[0-9A-Z]{26}$/);
    expect(event.id).toBe("");
    expect(out.payload).toEqual(event.payload);
    expect(Event.decode(encoded)).toEqual(out);
    // The encoding is a snapshot: what the caller changes afterwards is not in it.
    const before = Buffer.from(encoded);
    if (event.payload?.$case === "userMessage") event.payload.value.content = [];
    expect(Buffer.from(encoded)).toEqual(before);
    expect(Event.decode(encoded)).not.toEqual(out);
  });

  it("keeps a client-chosen id and leaves seq, created_at and session_id to the log", () => {
    const createdAt = new Date(0);
    const event = { ...message(), id: "client-1", seq: 9, sessionId: "sesn_x", createdAt };
    const { event: out } = validateEventForAppend(event, opts);
    expect([out.id, out.seq, out.sessionId, out.createdAt]).toEqual(["client-1", 9, "sesn_x", createdAt]);
  });

  it("names the field at fault", () => {
    expect(invalidField(() => validateEventForAppend({ ...message(), type: "user.shout" }, opts))).toBe("event.type");
    expect(invalidField(() => validateEventForAppend({ ...message(), payload: undefined }, opts))).toBe("event.payload");
    expect(invalidField(() => validateEventForAppend({ ...message(), id: "a b" }, opts))).toBe("event.id");
    expect(invalidField(() => validateEventForAppend({ ...message(), id: "x".repeat(129) }, opts))).toBe("event.id");
    const empty = newEvent("user.message", { content: [] });
    expect(invalidField(() => validateEventForAppend(empty, { ...opts, field: "events[3]" }))).toBe(
      "events[3].payload.user_message.content",
    );
  });

  it("says both types when the type does not match the payload", () => {
    const err = thrown(() => validateEventForAppend({ ...message(), type: "agent.message" }, opts));
    expect(err.field).toBe("event.type");
    expect(err.message).toContain('"agent.message"');
    expect(err.message).toContain('"user.message"');
  });

  it("refuses an event over the size limit, saying the size and the limit", () => {
    const big = newEvent("user.message", { content: [text("x".repeat(2000))] });
    const size = Event.encode(big).finish().length;
    expect(validateEventForAppend(big, { maxPayloadBytes: size }).event.id).toBe(big.id);
    const err = thrown(() => validateEventForAppend(big, { maxPayloadBytes: size - 1 }));
    expect([err.code, err.field]).toEqual(["INVALID_ARGUMENT", "event.payload"]);
    expect(err.message).toContain(`${size} bytes`);
    expect(err.message).toContain(`${size - 1} bytes`);
    expect(err.details).toEqual({ size_bytes: size, limit_bytes: size - 1 });
  });

  it("refuses a nonsensical limit", () => {
    expect(() => validateEventForAppend(message(), { maxPayloadBytes: 0 })).toThrow(RangeError);
  });

  it("refuses tool inputs the decoder could not read back", () => {
    const nested = (depth: number): Record<string, unknown> => {
      let input: Record<string, unknown> = { leaf: 1 };
      for (let i = 1; i < depth; i++) input = { n: input };
      return input;
    };
    const toolUse = (input: Record<string, unknown>): Event =>
      newEvent("agent.tool_use", { name: "bash", input, evaluatedPermission: 0, sandboxId: "" });
    const deepest = validateEventForAppend(toolUse(nested(MAX_INPUT_DEPTH)), opts).event;
    expect(Event.decode(Event.encode(deepest).finish())).toEqual(deepest);
    expect(() => Event.decode(Event.encode(toolUse(nested(MAX_INPUT_DEPTH + 1))).finish())).toThrow();
    const field = invalidField(() => validateEventForAppend(toolUse(nested(MAX_INPUT_DEPTH + 1)), opts));
    expect(field).toBe(`event.payload.agent_tool_use.input${".n".repeat(MAX_INPUT_DEPTH)}`);
    expect(invalidField(() => validateEventForAppend(toolUse({ x: Number.NaN }), opts))).toBe(
      "event.payload.agent_tool_use.input.x",
    );
    expect(invalidField(() => validateEventForAppend(toolUse({ f: () => 1 }), opts))).toBe(
      "event.payload.agent_tool_use.input.f",
    );
  });
});
