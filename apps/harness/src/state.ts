/**
 * What the log says must happen next. The harness keeps no state of its own: after every step,
 * and after a crash on a fresh instance, this function reads the events and names the next step.
 * That is what makes "resume from the last event" exact.
 */
import { unansweredToolUses, type PendingToolUse } from "@metaharness/events";
import { StopReasonType, type Event } from "@metaharness/proto";
import { overBudget, type Limits } from "./budget.js";

export { unansweredToolUses, type PendingToolUse, type ToolUseKind } from "@metaharness/events";

export type NextStep =
  | { readonly kind: "stop"; readonly why: "terminated" }
  | { readonly kind: "interrupt"; readonly unanswered: PendingToolUse[] }
  | { readonly kind: "run-tools"; readonly tools: PendingToolUse[] }
  /** Sandbox tools a self-hosted environment's worker runs: the session stays running meanwhile. */
  | { readonly kind: "await-hands"; readonly tools: PendingToolUse[] }
  | { readonly kind: "wait"; readonly eventIds: string[] }
  | { readonly kind: "budget" }
  | { readonly kind: "call-model" }
  | { readonly kind: "done" };

/** The last status event (running / idle / terminated), if any. */
export function lastStatus(events: readonly Event[]): Event | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const c = events[i]?.payload?.$case;
    if (c === "sessionStatusIdle" || c === "sessionStatusRunning" || c === "sessionStatusTerminated") return events[i];
  }
  return undefined;
}

/** The seqs of span.model_request_start events whose request completed (an end refers to it). */
export function completedRequests(events: readonly Event[]): Set<string> {
  const done = new Set<string>();
  for (const e of events) if (e.payload?.$case === "spanModelRequestEnd") done.add(e.payload.value.modelRequestStartId);
  return done;
}

/**
 * Whether user input (a message or a tool result) is newer than what the model last saw: it
 * came after the start of the last completed model request (input sent while a request streams
 * was not in it) and after the last idle (an interrupt, an error or the budget also answer what
 * came before them). A request that never completed (a crash mid-stream) answers nothing. A
 * budget changed (raised or removed) after the idle the budget ended a turn with reopens that
 * turn: what it had not answered is unanswered again.
 */
function hasUnansweredInput(events: readonly Event[]): boolean {
  const completed = completedRequests(events);
  let budgetChanged = false;
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    const p = e?.payload;
    const c = p?.$case;
    if (p?.$case === "sessionUpdated" && p.value.budget !== undefined) budgetChanged = true;
    if (p?.$case === "sessionStatusIdle") {
      if (!budgetChanged || p.value.stopReason?.type !== StopReasonType.STOP_REASON_TYPE_BUDGET_REACHED) return false;
      budgetChanged = false;
      continue;
    }
    if (c === "spanModelRequestStart" && completed.has(e!.id)) return false;
    if (
      c === "userMessage" ||
      c === "agentToolResult" ||
      c === "agentMcpToolResult" ||
      c === "userCustomToolResult" ||
      c === "userToolResult"
    ) {
      return true;
    }
  }
  return false;
}

/** An interrupt the harness has not yet acted on: after the last idle / turn start. */
function pendingInterrupt(events: readonly Event[]): boolean {
  for (let i = events.length - 1; i >= 0; i--) {
    const c = events[i]?.payload?.$case;
    if (c === "userInterrupt") return true;
    if (c === "sessionStatusIdle") return false;
  }
  return false;
}

const NO_WORKER_TOOLS: ReadonlySet<string> = new Set();

/**
 * `workerTools`: in a self-hosted environment, the tools its workers run (the sandbox tools);
 * each agent.tool_use of one is answered by a worker's user.tool_result, not by the harness.
 */
export function nextStep(events: readonly Event[], limits: Limits, workerTools: ReadonlySet<string> = NO_WORKER_TOOLS): NextStep {
  const status = lastStatus(events);
  if (status?.payload?.$case === "sessionStatusTerminated") return { kind: "stop", why: "terminated" };
  const pending = unansweredToolUses(events);
  if (pendingInterrupt(events)) {
    // Only a running (or just-woken) turn is interrupted; an idle session ignores it.
    if (status?.payload?.$case === "sessionStatusRunning" || pending.length > 0) {
      return { kind: "interrupt", unanswered: pending };
    }
  }
  const decided = (t: PendingToolUse): boolean => !t.needsConfirmation || t.confirmation !== undefined;
  // A worker runs what is allowed; a denial is still the harness's to record.
  const byWorker = (t: PendingToolUse): boolean => t.kind === "sandbox" && workerTools.has(t.name) && t.confirmation !== "deny";
  const runnable = pending.filter((t) => t.kind !== "custom" && decided(t) && !byWorker(t));
  if (runnable.length > 0) return { kind: "run-tools", tools: runnable };
  const remote = pending.filter((t) => byWorker(t) && decided(t));
  if (remote.length > 0) return { kind: "await-hands", tools: remote };
  if (pending.length > 0) return { kind: "wait", eventIds: pending.map((t) => t.event.id) };
  if (hasUnansweredInput(events)) return overBudget(events, limits) ? { kind: "budget" } : { kind: "call-model" };
  return { kind: "done" };
}

/**
 * Whether a log has nothing a "done" step should mark idle: no status event (the session never
 * ran) and no user input. A Wake sent beside a session's first input (the gateway's early Wake,
 * apps/gateway/src/sessions/append.ts) can read the log before that input lands: an idle then
 * would stand before the input, and a client would read it as its turn's end.
 */
export function neverRan(events: readonly Event[]): boolean {
  return lastStatus(events) === undefined && !userInputAfter(events, undefined);
}

/**
 * Whether the log needs nothing until new input comes: the session never ran or is idle, with no
 * user input after that, and no turn that a raised budget reopened (hasUnansweredInput): that
 * work is done at once. A loop woken beside input still landing waits for it then (LoopContext.awaitInputMs).
 */
export function awaitsInput(events: readonly Event[]): boolean {
  const status = lastStatus(events);
  return (status === undefined || status.payload?.$case === "sessionStatusIdle") && !userInputAfter(events, status) && !hasUnansweredInput(events);
}

/** Whether a user.* event was appended after `marker` (the last status event). */
export function userInputAfter(events: readonly Event[], marker: Event | undefined): boolean {
  const from = marker?.seq ?? 0;
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (e === undefined || e.seq <= from) return false;
    if (e.type.startsWith("user.")) return true;
  }
  return false;
}
