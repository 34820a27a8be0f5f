/**
 * Holds our JSON to the official SDK's event types: every assignment below is checked by tsc
 * (which compiles the tests), so a shape that drifts from the SDK stops the build. The runtime
 * checks make sure the renderer produces what its declared type says.
 *
 * The SDK is resolved from the workspace root (a dependency of test/), not declared here.
 */
import type {
  BetaManagedAgentsAgentCustomToolUseEvent,
  BetaManagedAgentsAgentMCPToolResultEvent,
  BetaManagedAgentsAgentMCPToolUseEvent,
  BetaManagedAgentsAgentMessageEvent,
  BetaManagedAgentsAgentThinkingEvent,
  BetaManagedAgentsAgentToolResultEvent,
  BetaManagedAgentsAgentToolUseEvent,
  BetaManagedAgentsModelOverloadedErrorObject,
  BetaManagedAgentsSessionEventType,
  BetaManagedAgentsSessionStatusIdleEvent,
  BetaManagedAgentsSessionStatusRunningEvent,
  BetaManagedAgentsSessionStatusTerminatedEvent,
  BetaManagedAgentsSpanModelRequestEndEvent,
  BetaManagedAgentsSpanModelRequestStartEvent,
  BetaManagedAgentsUserCustomToolResultEvent,
  BetaManagedAgentsUserCustomToolResultEventParams,
  BetaManagedAgentsUserInterruptEvent,
  BetaManagedAgentsUserMessageEvent,
  BetaManagedAgentsUserMessageEventParams,
  BetaManagedAgentsUserToolConfirmationEvent,
  BetaManagedAgentsUserToolConfirmationEventParams,
  BetaManagedAgentsUserToolResultEventParams,
  BetaManagedAgentsSystemMessageEventParams,
} from "@anthropic-ai/sdk/resources/beta/sessions/events";
import type {
  BetaManagedAgentsSessionUpdatedEvent,
  BetaManagedAgentsSessionUsageEvent,
  BetaManagedAgentsSystemMessageEvent,
  BetaManagedAgentsUserToolResultEvent,
} from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import { describe, expect, it } from "vitest";
import { fromManagedAgentsParams } from "./json/from-json.js";
import { toManagedAgentsJson } from "./json/to-json.js";
import type { ManagedAgentsJsonBodies, ManagedAgentsEventJson } from "./json/types.js";
import type { EventType } from "./registry.js";
import { storedEvent } from "./testing/fixtures.js";

/** A stored event always has processed_at; the SDK's agent events require it. */
type Stored<J> = Omit<J, "processed_at"> & { processed_at: string };

function stored<T extends EventType>(type: T): Stored<ManagedAgentsEventJson<T>> {
  const json = toManagedAgentsJson(storedEvent(type));
  expect(json.type).toBe(type);
  expect(typeof json.processed_at).toBe("string");
  return json as Stored<ManagedAgentsEventJson<T>>;
}

type Extends<A, B> = [A] extends [B] ? true : false;
const holds = <T extends true>(value: T): T => value;

describe("our JSON has the SDK's shapes", () => {
  it("for the user.* events", () => {
    const message: BetaManagedAgentsUserMessageEvent = stored("user.message");
    const interrupt: BetaManagedAgentsUserInterruptEvent = stored("user.interrupt");
    const custom: BetaManagedAgentsUserCustomToolResultEvent = stored("user.custom_tool_result");
    const confirmation: BetaManagedAgentsUserToolConfirmationEvent = stored("user.tool_confirmation");
    const result: BetaManagedAgentsUserToolResultEvent = stored("user.tool_result");
    expect(message.content.map((b) => b.type)).toEqual(["text", "image", "image", "document", "document", "redacted"]);
    expect(interrupt.type).toBe("user.interrupt");
    expect(custom.custom_tool_use_id).toMatch(/^sevt_/);
    expect([confirmation.result, confirmation.deny_message]).toEqual(["deny", "Not on the production database."]);
    expect(result.is_error).toBe(false);
  });

  it("for the agent.* events", () => {
    const message: BetaManagedAgentsAgentMessageEvent = stored("agent.message");
    const thinking: BetaManagedAgentsAgentThinkingEvent = stored("agent.thinking");
    const toolUse: BetaManagedAgentsAgentToolUseEvent = stored("agent.tool_use");
    const toolResult: BetaManagedAgentsAgentToolResultEvent = stored("agent.tool_result");
    const mcpUse: BetaManagedAgentsAgentMCPToolUseEvent = stored("agent.mcp_tool_use");
    const mcpResult: BetaManagedAgentsAgentMCPToolResultEvent = stored("agent.mcp_tool_result");
    const custom: BetaManagedAgentsAgentCustomToolUseEvent = stored("agent.custom_tool_use");
    expect(message.content[0]).toEqual({ type: "text", text: "Done: 3 files changed." });
    expect(thinking).not.toHaveProperty("thinking");
    expect([toolUse.name, toolUse.evaluated_permission, toolUse.input]).toEqual([
      "bash",
      "ask",
      { command: "ls -la", options: { timeout_ms: 5000, env: ["A=1"] } },
    ]);
    expect(toolResult.content?.[0]).toEqual({ type: "text", text: "total 0" });
    expect([mcpUse.mcp_server_name, mcpUse.name, mcpUse.evaluated_permission]).toEqual(["github", "create_issue", "allow"]);
    expect(mcpResult.mcp_tool_use_id).toMatch(/^sevt_/);
    expect(custom.input).toEqual({ city: "Paris" });
  });

  it("for the session.* and span.* events", () => {
    const running: BetaManagedAgentsSessionStatusRunningEvent = stored("session.status_running");
    const terminated: BetaManagedAgentsSessionStatusTerminatedEvent = stored("session.status_terminated");
    const idle = stored("session.status_idle");
    // "interrupted" is our addition to the stop reasons; every other reason is the SDK's.
    if (idle.stop_reason.type === "interrupted") throw new Error("fixture should not be interrupted");
    const sdkIdle: BetaManagedAgentsSessionStatusIdleEvent = { ...idle, stop_reason: idle.stop_reason };
    const start: BetaManagedAgentsSpanModelRequestStartEvent = stored("span.model_request_start");
    const end: BetaManagedAgentsSpanModelRequestEndEvent = stored("span.model_request_end");
    expect([running.type, terminated.type, start.type]).toEqual([
      "session.status_running",
      "session.status_terminated",
      "span.model_request_start",
    ]);
    expect(sdkIdle.stop_reason).toEqual({ type: "requires_action", event_ids: ["sevt_01JZ8Q4D3M5X6V7B8N9P0R1S2T"] });
    expect(sdkIdle.stop_details).toBeNull();
    expect(end.model_usage.cache_read_input_tokens).toBe(1024);

    // session.error: ErrorObject.type is an open string in the proto, a literal per variant in the SDK.
    type OurError = Omit<ManagedAgentsJsonBodies["session.error"]["error"], "type">;
    holds<Extends<OurError, Omit<BetaManagedAgentsModelOverloadedErrorObject, "type">>>(true);
    expect(stored("session.error").error.retry_status).toEqual({ type: "retrying" });

    // `agent` is the gateway's session agent object, kept as a Struct: the gateway builds it typed.
    const updated: Omit<BetaManagedAgentsSessionUpdatedEvent, "agent"> = stored("session.updated");
    const usage: BetaManagedAgentsSessionUsageEvent = stored("session.usage");
    expect([updated.budget, updated.title, updated.metadata]).toEqual([
      { type: "limit", max_list_cost: { amount: "5000", currency: "USD" } },
      "Refactor the parser",
      { ticket: "T-42" },
    ]);
    expect(updated).not.toHaveProperty("agent");
    expect(usage.usage.list_cost).toEqual({ amount: "37", currency: "USD" });
    expect(usage.budget?.max_list_cost.amount).toBe("5000");
    const system: BetaManagedAgentsSystemMessageEvent = stored("system.message");
    expect(system.content).toEqual([{ type: "text", text: "From now on, answer in French." }]);
  });

  it("covers only types the SDK knows, besides our sandbox.* events", () => {
    holds<Extends<Exclude<EventType, `sandbox.${string}`>, BetaManagedAgentsSessionEventType>>(true);
    expect(() => fromManagedAgentsParams({ type: "system.message", content: [{ type: "image", source: { type: "url", url: "https://example.com/a.png" } }] })).toThrow(
      "events[0].content[0]",
    );
  });

  it("parses what the SDK sends", () => {
    const params: [
      BetaManagedAgentsUserMessageEventParams,
      BetaManagedAgentsUserToolConfirmationEventParams,
      BetaManagedAgentsUserCustomToolResultEventParams,
      BetaManagedAgentsUserToolResultEventParams,
      BetaManagedAgentsSystemMessageEventParams,
    ] = [
      {
        type: "user.message",
        content: [
          { type: "text", text: "Summarise this" },
          { type: "document", source: { type: "url", url: "https://example.com/a.pdf" }, title: null },
        ],
      },
      { type: "user.tool_confirmation", tool_use_id: "sevt_1", result: "deny", deny_message: null },
      { type: "user.custom_tool_result", custom_tool_use_id: "sevt_2", content: [{ type: "text", text: "18C" }] },
      { type: "user.tool_result", tool_use_id: "sevt_3", is_error: true },
      { type: "system.message", content: [{ type: "text", text: "Be brief." }] },
    ];
    expect(params.map((p) => fromManagedAgentsParams(p).type)).toEqual([
      "user.message",
      "user.tool_confirmation",
      "user.custom_tool_result",
      "user.tool_result",
      "system.message",
    ]);
  });
});
