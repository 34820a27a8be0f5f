/**
 * The spelling of our proto enums in the HTTP API: `EVALUATED_PERMISSION_ASK` is "ask",
 * `STOP_REASON_TYPE_END_TURN` is "end_turn". Tables, so the spellings are visible in one place.
 */
import { EvaluatedPermission, RetryStatus, StopReasonType, ToolConfirmationResult } from "@metaharness/proto";
import type { EvaluatedPermissionJson, RetryStatusJson, StopReasonJson } from "./types.js";

export const PERMISSION_JSON: ReadonlyMap<EvaluatedPermission, EvaluatedPermissionJson> = new Map([
  [EvaluatedPermission.EVALUATED_PERMISSION_ALLOW, "allow"],
  [EvaluatedPermission.EVALUATED_PERMISSION_ASK, "ask"],
  [EvaluatedPermission.EVALUATED_PERMISSION_DENY, "deny"],
]);

export const CONFIRMATION_JSON: ReadonlyMap<ToolConfirmationResult, "allow" | "deny"> = new Map([
  [ToolConfirmationResult.TOOL_CONFIRMATION_RESULT_ALLOW, "allow"],
  [ToolConfirmationResult.TOOL_CONFIRMATION_RESULT_DENY, "deny"],
]);

export const CONFIRMATION_FROM_JSON: ReadonlyMap<string, ToolConfirmationResult> = new Map(
  [...CONFIRMATION_JSON].map(([value, json]) => [json, value]),
);

export const RETRY_STATUS_JSON: ReadonlyMap<RetryStatus, RetryStatusJson["type"]> = new Map([
  [RetryStatus.RETRY_STATUS_RETRYING, "retrying"],
  [RetryStatus.RETRY_STATUS_EXHAUSTED, "exhausted"],
  [RetryStatus.RETRY_STATUS_TERMINAL, "terminal"],
]);

type StopReasonTypeJson = Exclude<StopReasonJson["type"], "requires_action">;

export const STOP_REASON_JSON: ReadonlyMap<StopReasonType, StopReasonTypeJson> = new Map([
  [StopReasonType.STOP_REASON_TYPE_END_TURN, "end_turn"],
  [StopReasonType.STOP_REASON_TYPE_BUDGET_REACHED, "budget_reached"],
  [StopReasonType.STOP_REASON_TYPE_RETRIES_EXHAUSTED, "retries_exhausted"],
  [StopReasonType.STOP_REASON_TYPE_REFUSAL, "refusal"],
  [StopReasonType.STOP_REASON_TYPE_INTERRUPTED, "interrupted"],
]);
