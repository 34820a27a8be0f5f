/**
 * One renderer per event type, from the proto payload to the fields the HTTP API shows. The
 * table's type demands a renderer for every EventType and pins each one's output to the shape
 * in types.ts, which a test holds against the SDK.
 */
import { StopReasonType, type BudgetLimit, type ModelUsage, type MonetaryAmount, type StopReason } from "@metaharness/proto";
import type { EventType, PayloadOf } from "../registry.js";
import { renderAgentMessageContent, renderSystemContent, renderToolResultContent, renderUserMessageContent } from "./content.js";
import { CONFIRMATION_JSON, PERMISSION_JSON, RETRY_STATUS_JSON, STOP_REASON_JSON } from "./enums.js";
import type { BudgetLimitJson, EvaluatedPermissionJson, ManagedAgentsJsonBodies, MonetaryAmountJson, StopReasonJson } from "./types.js";
import { isRepositoryError } from "../errors.js";

type Renderer<T extends EventType> = (payload: PayloadOf<T>) => ManagedAgentsJsonBodies[T];

const empty = (): Record<never, never> => ({});

/** Struct inputs are plain objects already; absent means no arguments. */
function renderInput(input: Record<string, unknown> | undefined): Record<string, unknown> {
  return input ?? {};
}

function renderPermission(value: number): { evaluated_permission?: EvaluatedPermissionJson } {
  const json = PERMISSION_JSON.get(value);
  return json === undefined ? {} : { evaluated_permission: json };
}

function renderStopReason(reason: StopReason | undefined): StopReasonJson {
  if (reason?.type === StopReasonType.STOP_REASON_TYPE_REQUIRES_ACTION) {
    return { type: "requires_action", event_ids: [...reason.eventIds] };
  }
  // Validation refuses a missing or unspecified reason; an event that bypassed it reads as end_turn.
  return { type: STOP_REASON_JSON.get(reason?.type ?? 0) ?? "end_turn" };
}

function renderUsage(usage: ModelUsage | undefined): ManagedAgentsJsonBodies["span.model_request_end"]["model_usage"] {
  return {
    input_tokens: usage?.inputTokens ?? 0,
    output_tokens: usage?.outputTokens ?? 0,
    cache_creation_input_tokens: usage?.cacheCreationInputTokens ?? 0,
    cache_read_input_tokens: usage?.cacheReadInputTokens ?? 0,
  };
}

// Validation admits USD only, the one currency the SDK's BetaCurrency has.
function renderAmount(amount: MonetaryAmount | undefined): MonetaryAmountJson {
  return { amount: amount?.amount ?? "0", currency: "USD" };
}

export function renderBudget(limit: BudgetLimit): BudgetLimitJson {
  return { type: "limit", max_list_cost: renderAmount(limit.maxListCost) };
}

const RENDERERS: { readonly [T in EventType]: Renderer<T> } = {
  "user.message": (p) => ({ content: renderUserMessageContent(p.content) }),
  "user.interrupt": empty,
  "user.custom_tool_result": (p) => ({
    custom_tool_use_id: p.customToolUseId,
    content: renderToolResultContent(p.content),
    is_error: p.isError,
  }),
  "user.tool_confirmation": (p) => ({
    tool_use_id: p.toolUseId,
    result: CONFIRMATION_JSON.get(p.result) ?? "deny",
    ...(p.denyMessage === "" ? {} : { deny_message: p.denyMessage }),
  }),
  "user.tool_result": (p) => ({
    tool_use_id: p.toolUseId,
    content: renderToolResultContent(p.content),
    is_error: p.isError,
  }),
  "agent.message": (p) => ({ content: renderAgentMessageContent(p.content) }),
  // Managed Agents serves thinking as a progress signal only: the text and signature stay in the log.
  "agent.thinking": empty,
  "agent.thread_context_compacted": (p) => ({
    through_seq: Number(p.throughSeq),
    summary: p.summary,
    cleared_through_seq: Number(p.clearedThroughSeq),
    tokens_before: Number(p.tokensBefore),
    tokens_after: Number(p.tokensAfter),
    summary_usage: renderUsage(p.summaryUsage),
  }),
  "agent.tool_use": (p) => ({
    name: p.name,
    input: renderInput(p.input),
    ...renderPermission(p.evaluatedPermission),
    ...(p.sandboxId === "" ? {} : { sandbox_id: p.sandboxId }),
  }),
  "agent.tool_result": (p) => ({
    tool_use_id: p.toolUseId,
    content: renderToolResultContent(p.content),
    is_error: p.isError,
    ...(p.exitCode === undefined ? {} : { exit_code: p.exitCode }),
  }),
  "agent.mcp_tool_use": (p) => ({
    mcp_server_name: p.mcpServerName,
    name: p.name,
    input: renderInput(p.input),
    ...renderPermission(p.evaluatedPermission),
  }),
  "agent.mcp_tool_result": (p) => ({
    mcp_tool_use_id: p.mcpToolUseId,
    content: renderToolResultContent(p.content),
    is_error: p.isError,
  }),
  "agent.custom_tool_use": (p) => ({ name: p.name, input: renderInput(p.input) }),
  "session.status_running": empty,
  "session.status_idle": (p) => ({ stop_reason: renderStopReason(p.stopReason), stop_details: null }),
  "session.status_terminated": empty,
  "session.error": (p) => {
    const type = p.error?.type || "unknown_error";
    return {
      error: {
        type,
        message: p.error?.message ?? "",
        retry_status: { type: RETRY_STATUS_JSON.get(p.error?.retryStatus ?? 0) ?? "exhausted" },
        // The SDK's repository_*_error objects carry the repository (null when unknown).
        ...(isRepositoryError(type) ? { repository_url: p.error?.repositoryUrl || null } : {}),
      },
    };
  },
  "session.updated": (p) => ({
    ...(p.budget === undefined ? {} : { budget: p.budget.limit === undefined ? null : renderBudget(p.budget.limit) }),
    ...(p.title === undefined ? {} : { title: p.title.title ?? null }),
    ...(Object.keys(p.metadata).length === 0 ? {} : { metadata: { ...p.metadata } }),
    ...(p.agent === undefined ? {} : { agent: p.agent }),
  }),
  "session.usage": (p) => ({
    usage: {
      input_tokens: Number(p.inputTokens),
      output_tokens: Number(p.outputTokens),
      cache_read_input_tokens: Number(p.cacheReadInputTokens),
      cache_creation: { ephemeral_5m_input_tokens: Number(p.cacheCreationInputTokens) },
      ...(p.listCost === undefined ? {} : { list_cost: renderAmount(p.listCost) }),
    },
    budget: p.budget === undefined ? null : renderBudget(p.budget),
  }),
  "span.model_request_start": (p) => ({ model: p.model }),
  "span.model_request_end": (p) => ({
    model_request_start_id: p.modelRequestStartId,
    is_error: p.isError,
    model_usage: renderUsage(p.modelUsage),
    ...(p.stopReason === "" ? {} : { stop_reason: p.stopReason }),
  }),
  "sandbox.provisioned": (p) => ({ sandbox_id: p.sandboxId, driver: p.driver, duration_ms: p.durationMs }),
  "sandbox.released": (p) => ({ sandbox_id: p.sandboxId, reason: p.reason }),
  "sandbox.lost": (p) => ({ sandbox_id: p.sandboxId, reason: p.reason }),
  "system.message": (p) => ({ content: renderSystemContent(p.content) }),
};

export function renderBody<T extends EventType>(type: T, payload: PayloadOf<T>): ManagedAgentsJsonBodies[T] {
  const render: Renderer<T> = RENDERERS[type];
  return render(payload);
}
