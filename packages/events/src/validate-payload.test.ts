/** The payload rules, one case per rule, each asserting the exact field named. */
import {
  RetryStatus,
  StopReasonType,
  ToolConfirmationResult,
  type ContentBlock,
  type EvaluatedPermission,
  type Event,
} from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import { newEvent } from "./event.js";
import type { EventType, PayloadOf } from "./registry.js";
import { PAYLOADS, text } from "./testing/fixtures.js";
import { invalidField } from "./testing/errors.js";
import { validateEventForAppend } from "./validate/append.js";

const opts = { maxPayloadBytes: 1 << 20 };

function fieldFor<T extends EventType>(type: T, patch: Partial<PayloadOf<T>>): string | undefined {
  const payload = { ...(PAYLOADS[type] as PayloadOf<T>), ...patch };
  const event: Event = newEvent(type, payload);
  return invalidField(() => validateEventForAppend(event, opts));
}

const source = { type: "base64", mediaType: "image/png", data: "AA==", url: "", fileId: "" };
const image = (patch: Partial<typeof source>): ContentBlock => ({
  block: { $case: "image", value: { source: { ...source, ...patch } } },
});

describe("payload rules", () => {
  it("user.message needs content, each block well formed", () => {
    const p = "event.payload.user_message";
    expect(fieldFor("user.message", { content: [] })).toBe(`${p}.content`);
    expect(fieldFor("user.message", { content: [text("a"), text("")] })).toBe(`${p}.content[1].text`);
    expect(fieldFor("user.message", { content: [{ block: undefined }] })).toBe(`${p}.content[0]`);
    expect(fieldFor("user.message", { content: [image({ type: "ftp" })] })).toBe(`${p}.content[0].image.source.type`);
    expect(fieldFor("user.message", { content: [image({ data: "" })] })).toBe(`${p}.content[0].image.source.data`);
    expect(fieldFor("user.message", { content: [image({ mediaType: "" })] })).toBe(
      `${p}.content[0].image.source.media_type`,
    );
    expect(fieldFor("user.message", { content: [image({ url: "https://x" })] })).toBe(
      `${p}.content[0].image.source.url`,
    );
    expect(fieldFor("user.message", { content: [image({ type: "text", data: "x" })] })).toBe(
      `${p}.content[0].image.source.type`,
    );
    const noSource: ContentBlock = { block: { $case: "document", value: { source: undefined, title: "", context: "" } } };
    expect(fieldFor("user.message", { content: [noSource] })).toBe(`${p}.content[0].document.source`);
  });

  it("agent.message holds only text and redacted blocks", () => {
    expect(fieldFor("agent.message", { content: [image({})] })).toBe("event.payload.agent_message.content[0]");
    expect(fieldFor("agent.message", { content: [] })).toBe("event.payload.agent_message.content");
  });

  it("tool results need the id of their call", () => {
    expect(fieldFor("user.custom_tool_result", { customToolUseId: "" })).toBe(
      "event.payload.user_custom_tool_result.custom_tool_use_id",
    );
    expect(fieldFor("user.tool_result", { toolUseId: "" })).toBe("event.payload.user_tool_result.tool_use_id");
    expect(fieldFor("agent.tool_result", { toolUseId: "no spaces" })).toBe(
      "event.payload.agent_tool_result.tool_use_id",
    );
    expect(fieldFor("agent.mcp_tool_result", { mcpToolUseId: "" })).toBe(
      "event.payload.agent_mcp_tool_result.mcp_tool_use_id",
    );
    const redacted: ContentBlock = { block: { $case: "redacted", value: {} } };
    expect(fieldFor("agent.tool_result", { content: [redacted] })).toBe("event.payload.agent_tool_result.content[0]");
  });

  it("user.tool_confirmation needs a result, and a deny_message only with deny", () => {
    const p = "event.payload.user_tool_confirmation";
    const allow = ToolConfirmationResult.TOOL_CONFIRMATION_RESULT_ALLOW;
    expect(fieldFor("user.tool_confirmation", { toolUseId: "" })).toBe(`${p}.tool_use_id`);
    expect(fieldFor("user.tool_confirmation", { result: 0 })).toBe(`${p}.result`);
    expect(fieldFor("user.tool_confirmation", { result: ToolConfirmationResult.UNRECOGNIZED })).toBe(`${p}.result`);
    expect(fieldFor("user.tool_confirmation", { result: allow })).toBe(`${p}.deny_message`);
  });

  it("tool calls need a name and a decodable input", () => {
    expect(fieldFor("agent.tool_use", { name: "" })).toBe("event.payload.agent_tool_use.name");
    expect(fieldFor("agent.tool_use", { evaluatedPermission: 9 as EvaluatedPermission })).toBe(
      "event.payload.agent_tool_use.evaluated_permission",
    );
    expect(fieldFor("agent.mcp_tool_use", { mcpServerName: "" })).toBe("event.payload.agent_mcp_tool_use.mcp_server_name");
    expect(fieldFor("agent.mcp_tool_use", { name: "" })).toBe("event.payload.agent_mcp_tool_use.name");
    expect(fieldFor("agent.custom_tool_use", { name: "" })).toBe("event.payload.agent_custom_tool_use.name");
  });

  it("session.status_idle needs a stop reason, and event_ids exactly with requires_action", () => {
    const p = "event.payload.session_status_idle.stop_reason";
    const endTurn = StopReasonType.STOP_REASON_TYPE_END_TURN;
    const requiresAction = StopReasonType.STOP_REASON_TYPE_REQUIRES_ACTION;
    expect(fieldFor("session.status_idle", { stopReason: undefined })).toBe(p);
    expect(fieldFor("session.status_idle", { stopReason: { type: 0, eventIds: [] } })).toBe(`${p}.type`);
    expect(fieldFor("session.status_idle", { stopReason: { type: requiresAction, eventIds: [] } })).toBe(
      `${p}.event_ids`,
    );
    expect(fieldFor("session.status_idle", { stopReason: { type: requiresAction, eventIds: ["a", ""] } })).toBe(
      `${p}.event_ids[1]`,
    );
    expect(fieldFor("session.status_idle", { stopReason: { type: endTurn, eventIds: ["a"] } })).toBe(`${p}.event_ids`);
  });

  it("session.error needs an error with a type and a retry status", () => {
    const p = "event.payload.session_error.error";
    const retrying = RetryStatus.RETRY_STATUS_RETRYING;
    expect(fieldFor("session.error", { error: undefined })).toBe(p);
    expect(fieldFor("session.error", { error: { type: "", message: "", retryStatus: retrying, repositoryUrl: "" } })).toBe(`${p}.type`);
    expect(fieldFor("session.error", { error: { type: "unknown_error", message: "", retryStatus: 0, repositoryUrl: "" } })).toBe(
      `${p}.retry_status`,
    );
    const url = "https://git.example.com/org/app.git";
    expect(fieldFor("session.error", { error: { type: "unknown_error", message: "", retryStatus: retrying, repositoryUrl: url } })).toBe(
      `${p}.repository_url`,
    );
    const repositoryError = { type: "repository_forbidden_error", message: "", retryStatus: retrying, repositoryUrl: url };
    expect(() => validateEventForAppend(newEvent("session.error", { error: repositoryError }), opts)).not.toThrow();
  });

  it("span.model_request_end names its start; sandbox events name their sandbox", () => {
    expect(fieldFor("span.model_request_end", { modelRequestStartId: "" })).toBe(
      "event.payload.span_model_request_end.model_request_start_id",
    );
    expect(fieldFor("sandbox.provisioned", { sandboxId: "" })).toBe("event.payload.sandbox_provisioned.sandbox_id");
    expect(fieldFor("sandbox.released", { sandboxId: "" })).toBe("event.payload.sandbox_released.sandbox_id");
    expect(fieldFor("sandbox.lost", { sandboxId: "" })).toBe("event.payload.sandbox_lost.sandbox_id");
  });
});
