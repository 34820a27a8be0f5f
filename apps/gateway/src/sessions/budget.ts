/**
 * A session's budget (BetaManagedAgentsBudgetLimit) as the gateway takes it: only for a model
 * with a list price (the price table of ui/browser/prices.ts, MH_MODEL_PRICES), set when the
 * session is created and never added later, raised only above the list cost already consumed.
 * The harness enforces it (apps/harness/src/budget.ts) with the list prices handed over here in
 * the session's AgentConfig, and a change reaches it as a session.updated event in the log.
 */
import type { BetaManagedAgentsBudgetLimit } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import type { BudgetLimit, ModelPrice } from "@metaharness/proto";
import { ApiError } from "../errors/api-error.js";
import { priceOf, type PriceTable } from "../ui/browser/prices.js";

/** The model's list prices for the harness, if the table has them. */
export function listPrice(prices: PriceTable, model: string): ModelPrice | undefined {
  const p = priceOf(prices, model);
  return p === undefined ? undefined : { input: p.input, output: p.output, cacheRead: p.cache_read, cacheWrite5m: p.cache_write_5m, cacheWrite1h: p.cache_write_1h };
}

export function budgetLimit(budget: BetaManagedAgentsBudgetLimit): BudgetLimit {
  return { maxListCost: { amount: budget.max_list_cost.amount, currency: budget.max_list_cost.currency } };
}

/** A budget needs a price to measure against. */
export function checkBudgetable(price: ModelPrice | undefined, model: string): void {
  if (price === undefined) {
    throw new ApiError("model_not_budgetable", `budget: model ${JSON.stringify(model)} has no list price in this gateway's price table (MH_MODEL_PRICES), so a budget cannot measure it`);
  }
}

/**
 * Whether `next` may replace `current` (null: removal, always allowed): a session without a
 * budget gets none, and a new ceiling must exceed what was consumed (`consumedCents`, null
 * before any usage was priced).
 */
export function checkBudgetChange(
  current: BetaManagedAgentsBudgetLimit | null,
  next: BetaManagedAgentsBudgetLimit | null,
  consumedCents: number | null,
  price: ModelPrice | undefined,
  model: string,
): void {
  if (next === null) return;
  if (current === null) throw new ApiError("budget_create_only", "budget: this session was created without a budget, or its budget was removed; a budget can only be set when a session is created");
  checkBudgetable(price, model);
  const consumed = consumedCents ?? 0;
  if (Number(next.max_list_cost.amount) <= consumed) {
    throw new ApiError("budget_not_raised", `budget.max_list_cost.amount: ${next.max_list_cost.amount} is not above the ${consumed} the session has already consumed (in minor units of USD)`);
  }
}
