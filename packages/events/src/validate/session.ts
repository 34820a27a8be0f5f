/** Payload rules of the session.* events: the session's lifecycle. */
import { RetryStatus, StopReasonType, type BudgetLimit, type MonetaryAmount } from "@metaharness/proto";
import { invalidArgument } from "@metaharness/errors";
import { isRepositoryError } from "../errors.js";
import {
  enumValues,
  noPayloadFields,
  requireEnum,
  requireEventId,
  requireString,
  type DomainValidators,
} from "./check.js";

const STOP_REASONS = enumValues(StopReasonType);
const MINOR_UNITS = /^(0|[1-9][0-9]{0,17})$/;

/** BetaMonetaryAmount: minor units without leading zeros, in USD (the SDK's only currency). */
export function checkAmount(amount: MonetaryAmount | undefined, path: string): void {
  if (amount === undefined) throw invalidArgument(path, "is required");
  if (!MINOR_UNITS.test(amount.amount)) throw invalidArgument(`${path}.amount`, "must be minor units as a decimal string without leading zeros, e.g. \"2500\" for 25.00");
  if (amount.currency !== "USD") throw invalidArgument(`${path}.currency`, "must be USD");
}

function checkBudget(limit: BudgetLimit, path: string): void {
  checkAmount(limit.maxListCost, `${path}.max_list_cost`);
}
const RETRY_STATUSES = enumValues(RetryStatus);

export const SESSION_VALIDATORS: DomainValidators<"session"> = {
  "session.status_running": noPayloadFields,
  "session.status_idle": (p, path) => {
    const reason = p.stopReason;
    if (reason === undefined) throw invalidArgument(`${path}.stop_reason`, "is required");
    requireEnum(reason.type, STOP_REASONS, `${path}.stop_reason.type`, {
      allowUnspecified: false,
      expected: "end_turn, requires_action, budget_reached, retries_exhausted, refusal or interrupted",
    });
    const ids = `${path}.stop_reason.event_ids`;
    if (reason.type === StopReasonType.STOP_REASON_TYPE_REQUIRES_ACTION) {
      if (reason.eventIds.length === 0) {
        throw invalidArgument(ids, "must list the events the session waits on when type is requires_action");
      }
      reason.eventIds.forEach((id, i) => requireEventId(id, `${ids}[${i}]`));
    } else if (reason.eventIds.length > 0) {
      throw invalidArgument(ids, "is only allowed when type is requires_action");
    }
  },
  "session.status_terminated": noPayloadFields,
  "session.updated": (p, path) => {
    if (p.budget?.limit !== undefined) checkBudget(p.budget.limit, `${path}.budget.limit`);
  },
  "session.usage": (p, path) => {
    if (p.listCost !== undefined) checkAmount(p.listCost, `${path}.list_cost`);
    if (p.budget !== undefined) checkBudget(p.budget, `${path}.budget`);
  },
  "session.error": (p, path) => {
    const error = p.error;
    if (error === undefined) throw invalidArgument(`${path}.error`, "is required");
    requireString(error.type, `${path}.error.type`);
    requireEnum(error.retryStatus, RETRY_STATUSES, `${path}.error.retry_status`, {
      allowUnspecified: false,
      expected: "retrying, exhausted or terminal",
    });
    if (error.repositoryUrl !== "" && !isRepositoryError(error.type)) {
      throw invalidArgument(`${path}.error.repository_url`, "is only allowed on repository_*_error types");
    }
  },
};
