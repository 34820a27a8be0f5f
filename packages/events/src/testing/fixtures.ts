/**
 * One valid event of every type with every optional field set, for the tests: the round trips,
 * the SDK shape checks and the docs check (whose examples must show the same fields).
 */
import {
  EvaluatedPermission,
  RetryStatus,
  StopReasonType,
  ToolConfirmationResult,
  type ContentBlock,
  type Event,
} from "@metaharness/proto";
import { newEvent } from "../event.js";
import type { EventType, PayloadOf } from "../registry.js";

export const text = (value: string): ContentBlock => ({ block: { $case: "text", value: { text: value } } });

const media = { mediaType: "", data: "", url: "", fileId: "" };

export const RICH_CONTENT: ContentBlock[] = [
  text("Here is the chart and the report."),
  { block: { $case: "image", value: { source: { ...media, type: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" } } } },
  { block: { $case: "image", value: { source: { ...media, type: "url", url: "https://example.com/a.png" } } } },
  {
    block: {
      $case: "document",
      value: { source: { ...media, type: "file", fileId: "file_011" }, title: "Q3 report", context: "Finance" },
    },
  },
  {
    block: {
      $case: "document",
      value: { source: { ...media, type: "text", mediaType: "text/plain", data: "plain notes" }, title: "", context: "" },
    },
  },
];

/** What tool results may hold beyond RICH_CONTENT: search results, citable or not. */
export const TOOL_RESULT_CONTENT: ContentBlock[] = [
  ...RICH_CONTENT,
  {
    block: {
      $case: "searchResult",
      value: { source: "https://docs.example.com/retry", title: "Retry policy", content: [{ text: "Back off after a failure." }, { text: "Reset after a success." }], citationsEnabled: true },
    },
  },
  { block: { $case: "searchResult", value: { source: "kb://42", title: "Runbook", content: [{ text: "Page the on-call." }], citationsEnabled: false } } },
];

const TOOL_USE_ID = "sevt_01JZ8Q4D3M5X6V7B8N9P0R1S2T";

export const PAYLOADS: { readonly [T in EventType]: PayloadOf<T> } = {
  "user.message": { content: [...RICH_CONTENT, { block: { $case: "redacted", value: {} } }] },
  "user.interrupt": {},
  "user.custom_tool_result": { customToolUseId: TOOL_USE_ID, content: TOOL_RESULT_CONTENT, isError: true },
  "user.tool_confirmation": {
    toolUseId: TOOL_USE_ID,
    result: ToolConfirmationResult.TOOL_CONFIRMATION_RESULT_DENY,
    denyMessage: "Not on the production database.",
  },
  "user.tool_result": { toolUseId: TOOL_USE_ID, content: [text("total 0"), ...TOOL_RESULT_CONTENT.slice(-1)], isError: false },
  "agent.message": { content: [text("Done: 3 files changed."), { block: { $case: "redacted", value: {} } }] },
  "agent.thinking": { thinking: "The user wants a summary.", signature: "EqQBCkYIBRgCKkD=" },
  "agent.tool_use": {
    name: "bash",
    input: { command: "ls -la", options: { timeout_ms: 5000, env: ["A=1"] } },
    evaluatedPermission: EvaluatedPermission.EVALUATED_PERMISSION_ASK,
    sandboxId: "sbx_01JZ8Q4D3M",
  },
  "agent.tool_result": { toolUseId: TOOL_USE_ID, content: [text("total 0")], isError: false },
  "agent.mcp_tool_use": {
    mcpServerName: "github",
    name: "create_issue",
    input: { title: "Flaky test" },
    evaluatedPermission: EvaluatedPermission.EVALUATED_PERMISSION_ALLOW,
  },
  "agent.mcp_tool_result": { mcpToolUseId: TOOL_USE_ID, content: [text("Issue #42 created"), ...TOOL_RESULT_CONTENT.slice(-2)], isError: false },
  "agent.custom_tool_use": { name: "get_weather", input: { city: "Paris" } },
  "agent.thread_context_compacted": {
    throughSeq: 412,
    summary: "The user asked for a refactor of the parser; tests pass.",
    clearedThroughSeq: 430,
    tokensBefore: 150_000,
    tokensAfter: 21_000,
    summaryUsage: { inputTokens: 2_000, outputTokens: 300, cacheCreationInputTokens: 0, cacheReadInputTokens: 148_000 },
  },
  "session.status_running": {},
  "session.status_idle": {
    stopReason: { type: StopReasonType.STOP_REASON_TYPE_REQUIRES_ACTION, eventIds: [TOOL_USE_ID] },
  },
  "session.status_terminated": {},
  "session.error": {
    error: { type: "model_overloaded_error", message: "Overloaded", retryStatus: RetryStatus.RETRY_STATUS_RETRYING, repositoryUrl: "" },
  },
  "session.updated": {
    budget: { limit: { maxListCost: { amount: "5000", currency: "USD" } } },
    title: { title: "Refactor the parser" },
    metadata: { ticket: "T-42" },
    agent: undefined,
  },
  "session.usage": {
    inputTokens: 1200,
    outputTokens: 85,
    cacheCreationInputTokens: 0,
    cacheReadInputTokens: 1024,
    listCost: { amount: "37", currency: "USD" },
    budget: { maxListCost: { amount: "5000", currency: "USD" } },
  },
  "span.model_request_start": { model: "claude-sonnet-4-5" },
  "span.model_request_end": {
    modelRequestStartId: TOOL_USE_ID,
    isError: false,
    modelUsage: { inputTokens: 1200, outputTokens: 85, cacheCreationInputTokens: 0, cacheReadInputTokens: 1024 },
    stopReason: "tool_use",
  },
  "sandbox.provisioned": { sandboxId: "sbx_01JZ8Q4D3M", driver: "bubblewrap", durationMs: 412 },
  "sandbox.released": { sandboxId: "sbx_01JZ8Q4D3M", reason: "idle_timeout" },
  "sandbox.lost": { sandboxId: "sbx_01JZ8Q4D3M", reason: "out_of_memory" },
  "system.message": { content: [{ block: { $case: "text", value: { text: "From now on, answer in French." } } }] },
};

/** A stored-looking event of `type` (id, session, seq and time set as the log would). */
export function storedEvent<T extends EventType>(type: T, payload?: PayloadOf<T>, seq = 7): Event {
  return {
    ...newEvent(type, payload ?? (PAYLOADS[type] as PayloadOf<T>), { id: "sevt_01JZ8Q5A0000000000000000AB", sessionId: "sesn_01JZ8Q3Z" }),
    seq,
    createdAt: new Date("2025-06-01T12:00:00.000Z"),
  };
}
