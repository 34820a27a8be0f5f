/** The registry against event.proto and the generated code: a new oneof field must be registered. */
import { readFileSync } from "node:fs";
import { Event, type AgentToolUse, type SandboxLost, type UserMessage } from "@metaharness/proto";
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  EVENT_TYPES,
  isEventType,
  payloadCaseForType,
  payloadFieldForType,
  typeForPayloadCase,
  type EventTypeOf,
  type PayloadCase,
  type PayloadOf,
} from "./registry.js";
import { eventTypeOf, newEvent, payloadOf } from "./event.js";
import { EVENT_PROTO_URL, parseProto, readEventProto } from "./testing/proto-text.js";

describe("registry", () => {
  it("holds each type once", () => {
    expect(new Set(EVENT_TYPES).size).toBe(EVENT_TYPES.length);
  });

  it("has exactly the oneof fields of event.proto, in order", () => {
    const fields = readEventProto().payload.map((p) => p.field);
    expect(EVENT_TYPES.map((t) => payloadFieldForType(t))).toEqual(fields);
  });

  it("maps every generated $case to a type and back", () => {
    const event = newEvent("agent.tool_use", { name: "bash", input: {}, evaluatedPermission: 0, sandboxId: "" });
    const encodedCases = EVENT_TYPES.map((type) => {
      const json = { [payloadFieldForType(type)]: {} };
      return Event.fromJSON(json).payload?.$case;
    });
    expect(encodedCases).toEqual(EVENT_TYPES.map((t) => payloadCaseForType(t)));
    for (const type of EVENT_TYPES) expect(typeForPayloadCase(payloadCaseForType(type))).toBe(type);
    expect(payloadCaseForType("agent.mcp_tool_use")).toBe("agentMcpToolUse");
    expect(typeForPayloadCase("spanModelRequestEnd")).toBe("span.model_request_end");
    expect(typeForPayloadCase("nope")).toBeUndefined();
    expect(payloadCaseForType("user.define_outcome")).toBeUndefined();
    expect(eventTypeOf(event)).toBe("agent.tool_use");
  });

  it("recognises types", () => {
    expect(isEventType("user.message")).toBe(true);
    expect(isEventType("user.Message")).toBe(false);
    expect(isEventType(42)).toBe(false);
  });

  it("gives precise payload types", () => {
    expectTypeOf<PayloadOf<"agent.tool_use">>().toEqualTypeOf<AgentToolUse>();
    expectTypeOf<PayloadOf<"user.message">>().toEqualTypeOf<UserMessage>();
    expectTypeOf<PayloadOf<"sandbox.lost">>().toEqualTypeOf<SandboxLost>();
    expectTypeOf<EventTypeOf<"agentMcpToolResult">>().toEqualTypeOf<"agent.mcp_tool_result">();
    expectTypeOf(payloadCaseForType("session.status_idle")).toEqualTypeOf<"sessionStatusIdle">();
    expectTypeOf<PayloadCase>().toEqualTypeOf<NonNullable<Event["payload"]>["$case"]>();
  });

  it("reads a payload by type", () => {
    const event = newEvent("user.message", { content: [] }, { id: "m1" });
    expect(event.id).toBe("m1");
    expect(event.type).toBe("user.message");
    expect(payloadOf(event, "user.message")).toEqual({ content: [] });
    expect(payloadOf(event, "agent.message")).toBeUndefined();
    expect(newEvent("user.interrupt", {}).id).toMatch(/^sevt_/);
  });
});

describe("the proto reader behind these checks", () => {
  it("sees a oneof field added to Event", () => {
    const source = readFileSync(EVENT_PROTO_URL, "utf8").replace(
      "SandboxLost sandbox_lost = 102;",
      "SandboxLost sandbox_lost = 102;\n    UserDefineOutcome user_define_outcome = 25; // new",
    );
    const fields = parseProto(source).payload.map((p) => p.field);
    expect(fields).toContain("user_define_outcome");
    expect(fields.filter((f) => !EVENT_TYPES.some((t) => payloadFieldForType(t) === f))).toEqual(["user_define_outcome"]);
  });

  it("reads the fields of payload messages", () => {
    const { messages } = readEventProto();
    expect(messages.get("AgentToolUse")?.map((f) => f.name)).toEqual(["name", "input", "evaluated_permission", "sandbox_id"]);
    expect(messages.get("StopReason")).toContainEqual({ name: "event_ids", type: "string", repeated: true });
  });
});
