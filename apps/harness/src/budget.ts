/**
 * What a session may spend on its model, decided from the log like every other step (state.ts):
 * the agent's token budget, and the session's spend ceiling (sessions.create's `budget`, replaced
 * by the last session.updated that carries one) checked against the session's usage priced at
 * its model's list prices (AgentConfig.list_price, from the gateway's price table). A budget
 * raised while a turn runs applies to its next model request, and a harness that restarts finds
 * the same answer. Costs are counted in nano-dollars, integers, so no float rounding accumulates.
 */
import { newEvent, type PayloadOf } from "@metaharness/events";
import type { AgentConfig, BudgetLimit, Event, ModelPrice, ModelUsage } from "@metaharness/proto";

export interface Limits {
  /** Input + output tokens (cache reads and writes count as input); 0 for none. */
  readonly tokens: number;
  /** The model's list prices; without them the session has no list cost. */
  readonly price?: ModelPrice | undefined;
  /** The budget the session was created with. */
  readonly budget?: BudgetLimit | undefined;
}

export const NO_LIMITS: Limits = { tokens: 0 };

export function limitsOf(agent: AgentConfig | undefined): Limits {
  return { tokens: agent?.tokenBudget ?? 0, price: agent?.listPrice, budget: agent?.budget };
}

export interface UsageTotals {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheCreationInputTokens: number;
  readonly cacheReadInputTokens: number;
}

/** The index of the last session.usage of `events`, -1 if none. */
function lastSnapshot(events: readonly Event[]): number {
  return events.findLastIndex((e) => e.payload?.$case === "sessionUsage");
}

/**
 * Every model request's usage, a compaction's summary request included (it is paid for too):
 * the last session.usage's totals (the harness wrote them as this sum over the events before it)
 * plus the requests after it, so a view that starts at a snapshot (a compacting loop's horizon,
 * context/horizon.ts) counts the whole session.
 */
export function usageTotals(events: readonly Event[]): UsageTotals {
  const at = lastSnapshot(events);
  const snapshot = events[at]?.payload;
  const t =
    snapshot?.$case === "sessionUsage"
      ? {
          inputTokens: Number(snapshot.value.inputTokens),
          outputTokens: Number(snapshot.value.outputTokens),
          cacheCreationInputTokens: Number(snapshot.value.cacheCreationInputTokens),
          cacheReadInputTokens: Number(snapshot.value.cacheReadInputTokens),
        }
      : { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 };
  for (const e of events.slice(at + 1)) {
    const p = e.payload;
    const u: ModelUsage | undefined = p?.$case === "spanModelRequestEnd" ? p.value.modelUsage : p?.$case === "agentThreadContextCompacted" ? p.value.summaryUsage : undefined;
    if (u === undefined) continue;
    t.inputTokens += Number(u.inputTokens);
    t.outputTokens += Number(u.outputTokens);
    t.cacheCreationInputTokens += Number(u.cacheCreationInputTokens);
    t.cacheReadInputTokens += Number(u.cacheReadInputTokens);
  }
  return t;
}

const NANO_PER_CENT = 10_000_000;

/**
 * The usage at list prices, in nano-dollars (US dollars per million tokens, times 1,000, are
 * nano-dollars per token). Cache writes are priced at the 5-minute rate, the lifetime the harness
 * asks for.
 */
export function costNanoUsd(u: UsageTotals, price: ModelPrice): number {
  const perToken = (dollarsPerMillion: number): number => dollarsPerMillion * 1000;
  return Math.round(
    u.inputTokens * perToken(price.input) +
      u.outputTokens * perToken(price.output) +
      u.cacheCreationInputTokens * perToken(price.cacheWrite5m) +
      u.cacheReadInputTokens * perToken(price.cacheRead),
  );
}

/**
 * The budget in force: the last session.updated's change of it, else the one in force at the last
 * session.usage (which says it), else the one created with.
 */
export function budgetInForce(events: readonly Event[], created: BudgetLimit | undefined): BudgetLimit | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const p = events[i]?.payload;
    if (p?.$case === "sessionUpdated" && p.value.budget !== undefined) return p.value.budget.limit;
    if (p?.$case === "sessionUsage") return p.value.budget;
  }
  return created;
}

function maxNano(limit: BudgetLimit): number {
  return Number(limit.maxListCost?.amount ?? "0") * NANO_PER_CENT;
}

/**
 * Whether the next model request must not be made: the tokens reached the agent's token budget,
 * or the list cost reached the budget. A budget the usage cannot be priced against (no list
 * price) stops every request, as the SDK's budget_reached says: the gateway refuses such a
 * budget, so only a price removed from the table since leads here.
 */
export function overBudget(events: readonly Event[], limits: Limits): boolean {
  const u = usageTotals(events);
  if (limits.tokens > 0 && u.inputTokens + u.cacheCreationInputTokens + u.cacheReadInputTokens + u.outputTokens >= limits.tokens) return true;
  const limit = budgetInForce(events, limits.budget);
  if (limit === undefined) return false;
  if (limits.price === undefined) return true;
  return costNanoUsd(u, limits.price) >= maxNano(limit);
}

/** The session.usage payload for the log as it stands. */
export function usageSnapshot(events: readonly Event[], limits: Limits): PayloadOf<"session.usage"> {
  const u = usageTotals(events);
  const cents = limits.price === undefined ? undefined : Math.floor(costNanoUsd(u, limits.price) / NANO_PER_CENT);
  return {
    ...u,
    listCost: cents === undefined ? undefined : { amount: String(cents), currency: "USD" },
    budget: budgetInForce(events, limits.budget),
  };
}

function sameSnapshot(a: PayloadOf<"session.usage">, b: PayloadOf<"session.usage">): boolean {
  return (
    Number(a.inputTokens) === Number(b.inputTokens) &&
    Number(a.outputTokens) === Number(b.outputTokens) &&
    Number(a.cacheCreationInputTokens) === Number(b.cacheCreationInputTokens) &&
    Number(a.cacheReadInputTokens) === Number(b.cacheReadInputTokens) &&
    a.listCost?.amount === b.listCost?.amount &&
    a.budget?.maxListCost?.amount === b.budget?.maxListCost?.amount
  );
}

/**
 * The session.usage to write before an idle: when the snapshot differs from the log's last one,
 * or always when the budget stops the turn (the usage the budget was checked against).
 */
export function usageBeforeIdle(events: readonly Event[], limits: Limits, budgetStop: boolean): Event | undefined {
  const now = usageSnapshot(events, limits);
  if (!budgetStop) {
    for (let i = events.length - 1; i >= 0; i--) {
      const p = events[i]?.payload;
      if (p?.$case !== "sessionUsage") continue;
      if (sameSnapshot(p.value, now)) return undefined;
      break;
    }
    const nothing = Number(now.inputTokens) + Number(now.outputTokens) + Number(now.cacheCreationInputTokens) + Number(now.cacheReadInputTokens) === 0 && now.budget === undefined;
    if (nothing && !events.some((e) => e.payload?.$case === "sessionUsage")) return undefined;
  }
  return newEvent("session.usage", now);
}
