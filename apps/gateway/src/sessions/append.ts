/**
 * User input into a session: appended to the log in the order sent, in one atomic EmitEvents,
 * then the harness is woken, unless the log's answer says a harness still follows the session.
 * The harness also sweeps for sessions with unanswered input, so a failed Wake is logged and the
 * request still succeeds. `user.interrupt` needs nothing special: the harness driving the
 * session follows the log and acts on it as soon as it is appended. system.message alone wakes
 * nothing: it starts no turn, and waits in the log for the next one.
 *
 * The skipped Wake. The append's answer carries how long the session's lease has left after it
 * (EmitEventsResponse.lease_left_ms, read under the append's own row lock). A harness holds the
 * lease while it drives a turn (renewed to its full TTL every third of it) and while it lingers
 * after the turn for the next input (apps/harness/src/loop/tool-loop.ts linger()), the turn's
 * last append having set it to run out a margin after the linger ends (a sixth of the TTL, at
 * most 0.5 s: LINGER_MARGIN_MAX_MS in lease-keeper.ts). So a lease with more than `wakeSkipLeaseMs` left (that margin and time for
 * the input to reach the follow: config.ts) has a holder that is working, or lingering with at
 * least that slack of its linger to go: it sees the input on its follow of the log, and a Wake
 * would only have answered ALREADY_RUNNING (or HELD_ELSEWHERE on another instance). It cost
 * 0.5-0.6 ms of the gateway's CPU and 0.4 ms of the harness's a later turn, and a round trip on
 * the send's way. What if the holder does not take the input after all:
 * - it stops driving anyway (a linger ended because the agent changed, a failed loop, a loop at
 *   MH_IDLE_LINGER_MS=0 that decided its turn was over, a shutdown): it gives the lease back,
 *   and the log announces a session given back that awaits a harness (the input set
 *   awaiting_harness) to every harness's line (HoldLeases), which wakes it at once, as it does
 *   for a holder that died. A Wake sent then would have met the same loop still active and
 *   answered ALREADY_RUNNING: the skip loses nothing there. Where harnesses are woken from Kafka
 *   too (MH_KAFKA_WAKE), the input's Kafka wake on the holder's own instance waits for the
 *   release under way and takes the session then (test/integration/gateway/wake-skip.test.ts);
 *   on another instance it finds the lease still held, and the release's news does it.
 * - its linger runs out before the input reaches it (delivery slower than the slack): the lease,
 *   set to run out that margin after the linger, runs out by itself (or is given back, as
 *   above, if a renewal extended it), then the sweeper (every 0.5 s) finds the session awaiting
 *   a harness with none; the Kafka wake of the user.* event may take it sooner.
 * - it hangs: its lease expires unrenewed and the sweeper finds the session, as it would with a
 *   Wake (which would have found the lease held).
 * A lease with less left, or none, is woken at once, as before.
 *
 * The early Wake. A session whose lease this instance last heard run out (or never heard of: a
 * new session's first input, or input after a pause longer than the harness's linger, which is
 * how people send) is woken beside its append, not after it: the harness's lease, read and
 * follow are under way while the input commits, and its first model request waits for the longer
 * of the two instead of their sum (issue 31: a woken turn's TTFT). The Wake says the input is
 * landing (WakeRequest.input_landing): a harness that takes the lease and reads the log before
 * the input is there finds nothing to do (a session that never ran is marked idle by nobody,
 * state.ts neverRan) and follows the log for it before deciding (session-events.ts
 * inputLanding). The Wake's answer says how far that harness read the log (read_seq): an
 * append that answers no lease gets a second Wake only when the harness had not read up to the
 * input (it took the lease first, then let the session go before the input landed: a loop with
 * no linger that gave up, or failed), or did not say (an older harness, another outcome). A Wake that a harness answered counts as a lease for WOKEN_HELD_MS
 * (lease-hints.ts): the next sends of a conversation wait for their append's answer, which skips
 * their Wake while the harness lingers.
 */
import { WakeOutcome, type Event } from "@metaharness/proto";
import { METRICS, counter } from "@metaharness/telemetry";
import type { FastifyBaseLogger as Logger } from "fastify";
import type { HarnessRpc, SessionLogRpc } from "../clients.js";
import type { LeaseHints } from "./lease-hints.js";

/** Wakes sent, failed and skipped (docs/operations.md): how often the skip saves the round trip. */
const wakes = counter(METRICS.gatewayWakes);

/** What appending input and waking the harness use. */
export interface AppendDeps {
  readonly log: SessionLogRpc;
  readonly harness: HarnessRpc;
  readonly wakeTimeoutMs: number;
  /** No Wake when the append leaves the session's lease more than this (MH_GATEWAY_WAKE_SKIP_LEASE_MS). */
  readonly wakeSkipLeaseMs: number;
  /** The sessions' leases as the appends here last heard them: which get their Wake beside the append. */
  readonly leaseHints: LeaseHints;
}

/** A Wake's answer: its outcome, and how far the harness driving the session had read its log (WakeResponse.read_seq). */
export interface Woken {
  readonly outcome: WakeOutcome;
  readonly readSeq: number;
}

/**
 * Wakes the session's harness; its answer, or undefined when the Wake failed. `inputLanding`:
 * sent beside the append of the input it is for (WakeRequest.input_landing).
 */
export async function wake(ctx: Pick<AppendDeps, "harness" | "wakeTimeoutMs">, sessionId: string, logger: Logger, inputLanding = false): Promise<Woken | undefined> {
  try {
    const { outcome, readSeq } = await ctx.harness.wake({ sessionId, inputLanding }, { deadlineMs: ctx.wakeTimeoutMs });
    wakes.add(1, { outcome: "sent" });
    return { outcome, readSeq };
  } catch (err) {
    wakes.add(1, { outcome: "failed" });
    logger.warn({ err, session_id: sessionId }, "harness wake failed; its sweeper will pick the session up");
    return undefined;
  }
}

/** A harness drives the session after a Wake of these outcomes (this Wake's, or one already did). */
const DRIVEN: ReadonlySet<WakeOutcome | undefined> = new Set([WakeOutcome.WAKE_OUTCOME_STARTED, WakeOutcome.WAKE_OUTCOME_ALREADY_RUNNING, WakeOutcome.WAKE_OUTCOME_HELD_ELSEWHERE]);
/** The outcomes whose read_seq says how far the harness driving the session read (this instance drives it). */
const READ_HERE: ReadonlySet<WakeOutcome> = new Set([WakeOutcome.WAKE_OUTCOME_STARTED, WakeOutcome.WAKE_OUTCOME_ALREADY_RUNNING]);

/**
 * Whether an append that left no lease needs a Wake after it, given the early Wake's answer: not
 * when a harness that drives the session had read its log up to the input already (it took the
 * lease after the input landed, or its loop saw it). A harness that read less held the lease
 * before the input and let it go before the input landed (the append found none): woken again.
 */
function wakeAfter(early: Woken | undefined, inputSeq: number): boolean {
  return early === undefined || !READ_HERE.has(early.outcome) || early.readSeq < inputSeq;
}

export async function appendUserEvents(ctx: AppendDeps, sessionId: string, events: Event[], logger: Logger): Promise<Event[]> {
  if (events.length === 0) return [];
  const startsTurn = !events.every((e) => e.type === "system.message");
  // wake() never rejects; a Wake whose append then fails leaves a harness that finds nothing to do.
  const early = startsTurn && !ctx.leaseHints.heldBeyond(sessionId, ctx.wakeSkipLeaseMs) ? wake(ctx, sessionId, logger, true) : undefined;
  let appended: Awaited<ReturnType<SessionLogRpc["emitEvents"]>>;
  let earlyAnswer: Woken | undefined;
  try {
    appended = await ctx.log.emitEvents({ sessionId, events });
  } finally {
    earlyAnswer = await early;
  }
  const { events: stored, leaseLeftMs } = appended;
  ctx.leaseHints.heard(sessionId, leaseLeftMs);
  if (!startsTurn) return stored;
  let driven = DRIVEN.has(earlyAnswer?.outcome);
  if (leaseLeftMs > ctx.wakeSkipLeaseMs) {
    if (early === undefined) wakes.add(1, { outcome: "skipped" });
  } else if (wakeAfter(earlyAnswer, stored.at(-1)?.seq ?? Number.MAX_SAFE_INTEGER)) driven = DRIVEN.has((await wake(ctx, sessionId, logger))?.outcome);
  if (driven) ctx.leaseHints.woke(sessionId);
  return stored;
}
