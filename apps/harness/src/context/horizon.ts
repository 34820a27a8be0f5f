/**
 * Where a compacting harness's view of its session starts (its horizon). The model sees the last
 * agent.thread_context_compacted's summary and the events after its through_seq; the loop decides
 * the next step from the turn the compaction was made in. Everything before both is settled: no
 * tool call was open when the harness compacted (it compacts only before a model request), an
 * idle before that turn answered all input and interrupts before it (one that the budget ended
 * does not, if the budget changed after it: state.ts), no model request spans an idle, and the
 * session's usage and budget up to a session.usage are in it (budget.ts counts from the last). So
 * a wake reads the log from the horizon, not from its first event, and a long session's turn costs
 * what the model's view costs, not what its log's length does (before, every wake read and
 * decoded the whole log: turn time grew with the turn number).
 *
 * The horizon is the earliest of: the last idle before the compaction that the budget did not
 * end (the turn's start), the last span.model_request_start at or before its through_seq (a
 * request whose user input was held back in model order, messages.ts modelOrder, must be seen
 * whole), through_seq + 1, and the last session.usage before those. Without a compaction, or
 * without such an idle before it, it is the log's first event. A few indexed reads of one event
 * each find it in the log; the same rule over events in memory lets a loop drop what a new
 * compaction settled.
 */
import { StopReasonType, type Event } from "@metaharness/proto";
import type { LogPort } from "../log-port.js";

const COMPACTED = "agent.thread_context_compacted";
const IDLE = "session.status_idle";
const REQUEST_START = "span.model_request_start";
const USAGE = "session.usage";
/** Idles read back at a time, looking for one the budget did not end. */
const IDLE_PAGE = 20;

export interface HorizonMarks {
  /** The last compaction's through_seq. */
  readonly compaction: { readonly throughSeq: number } | undefined;
  /** The seq of the last idle before the compaction that the budget did not end. */
  readonly idleBefore: number | undefined;
  /** The seq of the last model request start at or before the compaction's through_seq. */
  readonly requestStart: number | undefined;
}

/** The first seq the view must hold before the usage snapshot is added (1: the whole log). */
export function horizon(marks: HorizonMarks): number {
  const { compaction, idleBefore, requestStart } = marks;
  if (compaction === undefined || idleBefore === undefined) return 1;
  return Math.max(1, Math.min(idleBefore, requestStart ?? Number.POSITIVE_INFINITY, compaction.throughSeq + 1));
}

function settles(e: Event): boolean {
  const p = e.payload;
  return p?.$case === "sessionStatusIdle" && p.value.stopReason?.type !== StopReasonType.STOP_REASON_TYPE_BUDGET_REACHED;
}

/** The horizon of events held in memory (in seq order). */
export function horizonOf(events: readonly Event[]): number {
  const first = events[0]?.seq ?? 1;
  const at = events.findLastIndex((e) => e.payload?.$case === "agentThreadContextCompacted");
  const c = events[at];
  if (c?.payload?.$case !== "agentThreadContextCompacted") return first;
  const throughSeq = Number(c.payload.value.throughSeq);
  const before = events.slice(0, at);
  const h = horizon({
    compaction: { throughSeq },
    idleBefore: before.findLast(settles)?.seq,
    requestStart: before.findLast((e) => e.type === REQUEST_START && e.seq <= throughSeq)?.seq,
  });
  if (h <= 1) return first;
  // Without a session.usage before it, only the whole log counts the session's usage.
  const usage = events.findLast((e) => e.type === USAGE && e.seq < h)?.seq;
  // What is not in memory cannot be asked for: the view never starts before its first event.
  return Math.max(usage ?? first, first);
}

/** The horizon of the session in the log. */
export async function readHorizon(log: LogPort): Promise<number> {
  const last = async (beforeSeq: number, type: string): Promise<Event | undefined> => (await log.slice({ beforeSeq }, 1, [type])).events[0];
  const c = await last(Number.MAX_SAFE_INTEGER, COMPACTED);
  if (c?.payload?.$case !== "agentThreadContextCompacted") return 1;
  const throughSeq = Number(c.payload.value.throughSeq);
  const [idle, start] = await Promise.all([lastSettlingIdle(log, c.seq), last(throughSeq + 1, REQUEST_START)]);
  const h = horizon({ compaction: { throughSeq }, idleBefore: idle, requestStart: start?.seq });
  if (h <= 1) return 1;
  // Without a session.usage before it, only the whole log counts the session's usage.
  return (await last(h, USAGE))?.seq ?? 1;
}

async function lastSettlingIdle(log: LogPort, beforeSeq: number): Promise<number | undefined> {
  for (let before = beforeSeq; ; ) {
    const { events, hasMore } = await log.slice({ beforeSeq: before }, IDLE_PAGE, [IDLE]);
    const found = events.findLast(settles);
    if (found !== undefined) return found.seq;
    const oldest = events[0]?.seq;
    if (!hasMore || oldest === undefined) return undefined;
    before = oldest;
  }
}
