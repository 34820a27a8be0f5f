/**
 * Session usage and activity, folded from the log incrementally: each read of a session reads
 * only the usage and status events appended since the last fold (a bounded number of slices),
 * adds them up and saves the new totals with the seq they reach. The cost of a retrieve is the
 * new events, not the session's history. The list cost is the harness's: the last session.usage
 * snapshot's (it prices the usage the budget is checked against).
 */
import type { BetaManagedAgentsSessionStats, BetaManagedAgentsSessionUsage } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import type { Event } from "@metaharness/proto";
import type { SessionLogRpc } from "../clients.js";
import type { SessionRecord, SessionStore, UsageState } from "./store.js";

/** A compaction's summary request is a model request too: its usage rides on the compaction event. */
const USAGE_TYPES = ["span.model_request_end", "agent.thread_context_compacted", "session.usage", "session.status_running", "session.status_idle", "session.status_terminated"];
const SLICE = 1000;
/** Slices one read may fold; the rest waits for the next read. */
const MAX_SLICES = 5;

export function foldEvent(state: UsageState, event: Event): UsageState {
  const at = event.createdAt ?? new Date();
  const stop = (): UsageState =>
    state.runningSince === null ? state : { ...state, activeMs: state.activeMs + Math.max(0, at.getTime() - state.runningSince.getTime()), runningSince: null };
  const p = event.payload;
  switch (p?.$case) {
    case "spanModelRequestEnd":
    case "agentThreadContextCompacted": {
      const u = p.$case === "spanModelRequestEnd" ? p.value.modelUsage : p.value.summaryUsage;
      return {
        ...state,
        inputTokens: state.inputTokens + (u?.inputTokens ?? 0),
        outputTokens: state.outputTokens + (u?.outputTokens ?? 0),
        cacheCreationInputTokens: state.cacheCreationInputTokens + (u?.cacheCreationInputTokens ?? 0),
        cacheReadInputTokens: state.cacheReadInputTokens + (u?.cacheReadInputTokens ?? 0),
      };
    }
    case "sessionUsage":
      return p.value.listCost === undefined ? state : { ...state, listCostCents: Number(p.value.listCost.amount) };
    case "sessionStatusRunning":
      return state.runningSince === null ? { ...state, runningSince: at } : state;
    case "sessionStatusIdle":
      return stop();
    case "sessionStatusTerminated":
      return { ...stop(), endedAt: at };
    default:
      return state;
  }
}

/** Folds what the log holds beyond `session.usage` (up to `lastSeq`) and saves it. */
export async function refreshUsage(log: SessionLogRpc, store: SessionStore, session: SessionRecord, lastSeq: number): Promise<UsageState> {
  let state = session.usage;
  for (let i = 0; i < MAX_SLICES && state.throughSeq < lastSeq; i++) {
    const slice = await log.getEvents({
      sessionId: session.id,
      position: { $case: "afterSeq", value: state.throughSeq },
      limit: SLICE,
      types: USAGE_TYPES,
    });
    for (const event of slice.events) state = { ...foldEvent(state, event), throughSeq: event.seq };
    // Without more, every event up to the log's head was examined (other types included).
    if (!slice.hasMore) state = { ...state, throughSeq: Math.max(state.throughSeq, slice.lastSeq) };
  }
  if (state.throughSeq !== session.usage.throughSeq) await store.saveUsage(session.id, session.usage.throughSeq, state);
  return state;
}

export function renderUsage(state: UsageState, now: Date): BetaManagedAgentsSessionUsage {
  return {
    input_tokens: state.inputTokens,
    output_tokens: state.outputTokens,
    cache_read_input_tokens: state.cacheReadInputTokens,
    cache_creation: { ephemeral_5m_input_tokens: state.cacheCreationInputTokens },
    active_seconds: activeSeconds(state, now),
    ...(state.listCostCents === null ? {} : { list_cost: { amount: String(state.listCostCents), currency: "USD" } }),
  };
}

function activeSeconds(state: UsageState, now: Date): number {
  const running = state.runningSince === null ? 0 : Math.max(0, now.getTime() - state.runningSince.getTime());
  return Math.round((state.activeMs + running) / 1000);
}

export function renderStats(state: UsageState, createdAt: Date, now: Date): BetaManagedAgentsSessionStats {
  const end = state.endedAt ?? now;
  return { active_seconds: activeSeconds(state, now), duration_seconds: Math.max(0, Math.round((end.getTime() - createdAt.getTime()) / 1000)) };
}
