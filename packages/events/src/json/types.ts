/**
 * The shapes of the Managed Agents HTTP API's event objects as we serve them. They mirror the
 * SDK's BetaManagedAgents*Event types field for field (a test assigns them to the SDK's types),
 * plus our additions: `seq` and `session_id` on every event, `sandbox_id` on agent.tool_use,
 * `model` on span.model_request_start, `stop_reason` on span.model_request_end, the sandbox.*
 * events and the stop reason "interrupted". Type aliases, not interfaces, so that every shape is
 * also a `Record<string, unknown>`.
 */
import type { EventType } from "../registry.js";

export type TextBlockJson = { type: "text"; text: string };
export type Base64SourceJson = { type: "base64"; media_type: string; data: string };
export type UrlSourceJson = { type: "url"; url: string };
export type FileSourceJson = { type: "file"; file_id: string };
export type PlainTextSourceJson = { type: "text"; media_type: "text/plain"; data: string };
export type ImageSourceJson = Base64SourceJson | UrlSourceJson | FileSourceJson;
export type DocumentSourceJson = ImageSourceJson | PlainTextSourceJson;
export type ImageBlockJson = { type: "image"; source: ImageSourceJson };
export type DocumentBlockJson = { type: "document"; source: DocumentSourceJson; title?: string; context?: string };
export type SearchResultBlockJson = {
  type: "search_result";
  source: string;
  title: string;
  content: TextBlockJson[];
  citations: { enabled: boolean };
};
export type RedactedBlockJson = { type: "redacted" };
export type ContentBlockJson = TextBlockJson | ImageBlockJson | DocumentBlockJson | SearchResultBlockJson | RedactedBlockJson;
/** What user.message may hold (validation refuses other blocks there). */
export type UserMessageBlockJson = TextBlockJson | ImageBlockJson | DocumentBlockJson | RedactedBlockJson;
/** What agent.message may hold (validation refuses other blocks there). */
export type AgentMessageBlockJson = TextBlockJson | RedactedBlockJson;
/** What tool results may hold (validation refuses other blocks there). */
export type ToolResultBlockJson = TextBlockJson | ImageBlockJson | DocumentBlockJson | SearchResultBlockJson;

export type EvaluatedPermissionJson = "allow" | "ask" | "deny";
export type RetryStatusJson = { type: "retrying" | "exhausted" | "terminal" };
export type StopReasonJson =
  | { type: "end_turn" }
  | { type: "requires_action"; event_ids: string[] }
  | { type: "budget_reached" }
  | { type: "retries_exhausted" }
  | { type: "refusal" }
  | { type: "interrupted" };

type ToolResultJson = { content: ToolResultBlockJson[]; is_error: boolean };
type Empty = Record<never, never>;
/** BetaMonetaryAmount: minor units as a decimal string; USD is the only currency. */
export type MonetaryAmountJson = { amount: string; currency: "USD" };
/** BetaManagedAgentsBudgetLimit. */
export type BudgetLimitJson = { type: "limit"; max_list_cost: MonetaryAmountJson };
/** BetaManagedAgentsSessionUsageSnapshot as we fill it. */
export type UsageSnapshotJson = {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number };
  list_cost?: MonetaryAmountJson;
};
type ModelUsageJson = {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
};

/** The fields each type adds to the envelope. */
export type ManagedAgentsJsonBodies = {
  "user.message": { content: UserMessageBlockJson[] };
  "user.interrupt": Empty;
  "user.custom_tool_result": { custom_tool_use_id: string } & ToolResultJson;
  "user.tool_confirmation": { tool_use_id: string; result: "allow" | "deny"; deny_message?: string };
  "user.tool_result": { tool_use_id: string } & ToolResultJson;
  "agent.message": { content: AgentMessageBlockJson[] };
  "agent.thinking": Empty;
  "agent.thread_context_compacted": {
    through_seq: number;
    summary: string;
    cleared_through_seq: number;
    tokens_before: number;
    tokens_after: number;
    summary_usage: ModelUsageJson;
  };
  "agent.tool_use": {
    name: string;
    input: Record<string, unknown>;
    evaluated_permission?: EvaluatedPermissionJson;
    sandbox_id?: string;
  };
  /** exit_code: how a bash command ended (our addition). */
  "agent.tool_result": { tool_use_id: string; exit_code?: number } & ToolResultJson;
  "agent.mcp_tool_use": {
    mcp_server_name: string;
    name: string;
    input: Record<string, unknown>;
    evaluated_permission?: EvaluatedPermissionJson;
  };
  "agent.mcp_tool_result": { mcp_tool_use_id: string } & ToolResultJson;
  "agent.custom_tool_use": { name: string; input: Record<string, unknown> };
  "session.status_running": Empty;
  "session.status_idle": { stop_reason: StopReasonJson; stop_details: null };
  "session.status_terminated": Empty;
  "session.error": {
    error: { type: string; message: string; retry_status: RetryStatusJson; repository_url?: string | null };
  };
  "session.updated": {
    budget?: BudgetLimitJson | null;
    title?: string | null;
    metadata?: Record<string, string>;
    agent?: Record<string, unknown>;
  };
  "session.usage": { usage: UsageSnapshotJson; budget: BudgetLimitJson | null };
  "span.model_request_start": { model: string };
  "span.model_request_end": {
    model_request_start_id: string;
    is_error: boolean;
    model_usage: ModelUsageJson;
    stop_reason?: string;
  };
  "sandbox.provisioned": { sandbox_id: string; driver: string; duration_ms: number };
  "sandbox.released": { sandbox_id: string; reason: string };
  "sandbox.lost": { sandbox_id: string; reason: string };
  "system.message": { content: TextBlockJson[] };
};

/** What every event object carries. `processed_at` is null only for an event not yet stored. */
export type EnvelopeJson<T extends EventType> = {
  id: string;
  type: T;
  processed_at: string | null;
  seq: number;
  session_id: string;
};

/** An event object of the HTTP API; narrow it by `type`. */
export type ManagedAgentsEventJson<T extends EventType = EventType> = {
  [K in T]: EnvelopeJson<K> & ManagedAgentsJsonBodies[K];
}[T];
