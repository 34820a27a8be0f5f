/**
 * A loop's view of its session's events: read once at the start (from the first event, or from a
 * compacting loop's horizon, context/horizon.ts), then kept current by following the log (what
 * clients append while the loop works; the log leaves out the loop's own appends, which are
 * merged as they return).
 * `onInterrupt` fires the moment a user.interrupt arrives, so the running step can abort;
 * `changed` lets a step wait for what others append (a worker's tool results). The follow asks
 * the log to end it when the loop's lease is over (WatchEventsRequest.end_with_lease): once the
 * view is closed the stream is left to that end, and cancelled only if it does not come. Every idle
 * appended through a view is preceded by a session.usage snapshot when the usage changed since
 * the last one, or when the budget stopped the turn (budget.ts). Shared by every HarnessLoop.
 */
import { setImmediate as nextLoopTurn } from "node:timers/promises";
import { MhError, backoffMs, retryPolicy, sleep } from "@metaharness/errors";
import { StopReasonType, type Event } from "@metaharness/proto";
import { NO_LIMITS, usageBeforeIdle, type Limits } from "../budget.js";
import type { LoopContext } from "./harness-loop.js";
import { awaitsInput } from "../state.js";

/** What a view needs of its loop: the log, the lease it writes under, when to stop, where to log. */
export type ViewContext = Pick<LoopContext, "log" | "leaseEpoch" | "signal" | "logger" | "leaseAtIdle">;

export class SessionEvents {
  readonly events: Event[] = [];
  /** Aborted to cancel the follow: only when its end, awaited once the view closed, does not come (FOLLOW_END_WAIT_MS). */
  private readonly following = new AbortController();
  /** The loop is done with the view (close(), or its lease's signal): nothing more is merged. */
  private closed = false;
  private follower: Promise<void> = Promise.resolve();
  private readonly waiters = new Set<() => void>();
  /** The last append sent through the view, settled (either way) once its answer is back. */
  private appending: Promise<void> = Promise.resolve();

  private constructor(
    private readonly ctx: ViewContext,
    private readonly onInterrupt: () => void,
    private readonly limits: Limits,
  ) {}

  /**
   * Reads the history from `fromSeq` (the whole log by default) and starts following the log;
   * close() when the loop ends. `limits` prices the usage snapshots.
   *
   * The follow (a WatchEvents call) starts in the event loop's next turn: what the loop does at
   * once with the history it read, its first model request through the SDK to the socket, goes
   * first. Opening the stream took 0.3 ms of CPU on a woken session's way to the model. And if an
   * append of the loop's is on its way then (a model request's bookkeeping, sent with the
   * request), the follow waits for its answer: it then starts at the log's head, which the log
   * knows from that append, where started before the append's commit it began behind it 4 times
   * in 10 and the log read the events between (issue 31). It starts from the view's last event
   * whenever it starts, so it misses nothing, and an interrupt sent meanwhile arrives with its
   * first message. The loop's signal (its lease gone) closes the view.
   */
  static async open(ctx: ViewContext, onInterrupt: () => void, limits: Limits = NO_LIMITS, fromSeq = 1): Promise<SessionEvents> {
    const view = new SessionEvents(ctx, onInterrupt, limits);
    view.merge(await ctx.log.readAfter(Math.max(0, fromSeq - 1)));
    const stop = (): void => view.close();
    ctx.signal.addEventListener("abort", stop, { once: true });
    view.follower = nextLoopTurn()
      .then(() => view.appending)
      .then(() => view.follow())
      .finally(() => ctx.signal.removeEventListener("abort", stop));
    return view;
  }

  lastSeq(): number {
    return this.events[this.events.length - 1]?.seq ?? 0;
  }

  /** Appends under the lease and merges the stored events. */
  async append(...events: Event[]): Promise<void> {
    await this.mergeStored(await this.emit(this.withUsage(events)));
  }

  /** Under the lease; one that ends a turn sets the lease to run out with the linger (leaseAtIdle). */
  private emit(events: Event[], expectedSeq?: number): Promise<Event[]> {
    const atIdle = this.ctx.leaseAtIdle;
    const idleLast = atIdle !== undefined && events[events.length - 1]?.payload?.$case === "sessionStatusIdle";
    const appended = idleLast ? this.ctx.log.emit(events, this.ctx.leaseEpoch, expectedSeq, atIdle.ttlMs) : this.ctx.log.emit(events, this.ctx.leaseEpoch, expectedSeq);
    if (idleLast) atIdle.appending(appended);
    this.appending = appended.then(
      () => undefined,
      () => undefined,
    );
    return appended;
  }

  /** `events` with a session.usage before their idle, if it needs one. */
  private withUsage(events: Event[]): Event[] {
    const at = events.findIndex((e) => e.payload?.$case === "sessionStatusIdle");
    const idle = events[at]?.payload;
    if (idle?.$case !== "sessionStatusIdle") return events;
    const budgetStop = idle.value.stopReason?.type === StopReasonType.STOP_REASON_TYPE_BUDGET_REACHED;
    const usage = usageBeforeIdle([...this.events, ...events.slice(0, at)], this.limits, budgetStop);
    return usage === undefined ? events : [...events.slice(0, at), usage, ...events.slice(at)];
  }

  /**
   * Appends only if the log still ends at `seenSeq` (what a decision was taken on): for the
   * events that end a turn, which must not land after input the decision did not see (the idle
   * would mark it answered, and no harness would ever take it up). False, with the view brought
   * up to date, when something was appended since: the caller decides again.
   */
  async appendAt(seenSeq: number, ...events: Event[]): Promise<boolean> {
    try {
      await this.mergeStored(await this.emit(this.withUsage(events), seenSeq));
      return true;
    } catch (err) {
      const e = MhError.from(err);
      if (e.code !== "FAILED_PRECONDITION" || e.field !== "expected_seq") throw err;
      this.merge(await this.ctx.log.readAfter(this.lastSeq()));
      return false;
    }
  }

  /** Forgets the events before `seq` (a compaction settled them; context/horizon.ts). */
  dropBefore(seq: number): void {
    // The last event always stays: the view's lastSeq is where it follows the log from.
    const n = this.events.findIndex((e) => e.seq >= seq);
    if (n > 0) this.events.splice(0, n);
  }

  /**
   * Woken beside input still being appended (LoopContext.awaitInputMs): while the log needs
   * nothing until input comes, follows it for that input (at most `withinMs`), so that the loop's
   * first decision sees the input rather than a session with nothing to do. Until the input, not
   * the next event: another's append landing first (a system.message, a session.updated) would
   * have a loop without a linger give the session back before the input, which the gateway then
   * wakes no more (its early Wake was answered STARTED): left to the sweeper.
   */
  async inputLanding(withinMs: number | undefined, signal: AbortSignal): Promise<void> {
    if (withinMs === undefined || withinMs <= 0) return;
    const until = Date.now() + withinMs;
    while (awaitsInput(this.events) && !signal.aborted) {
      const left = until - Date.now();
      if (left <= 0) return;
      await this.changed(this.lastSeq(), signal, left);
    }
  }

  /**
   * Resolves once the view holds an event after `afterSeq`, when `signal` aborts, or `withinMs`
   * from now. The time is a timer of its own, not a signal: a deadline's signal combined with
   * `signal` (AbortSignal.any) cost a controller and a composite per wait (issue 31).
   */
  changed(afterSeq: number, signal: AbortSignal, withinMs?: number): Promise<void> {
    if (this.lastSeq() > afterSeq || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = withinMs === undefined ? undefined : setTimeout(() => done(), withinMs);
      // Like a deadline's, the wait alone does not keep the process running.
      timer?.unref();
      const done = (): void => {
        this.waiters.delete(done);
        signal.removeEventListener("abort", done);
        clearTimeout(timer);
        resolve();
      };
      this.waiters.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /**
   * The loop is done with the session: the view merges nothing more, and its follow is left for
   * the log to end when the lease is over (released, or run out after the linger: within
   * LINGER_MARGIN_MAX_MS of the linger's end), cancelled only if that end has not come
   * FOLLOW_END_WAIT_MS from now (a log that predates end_with_lease, a lease extended through
   * another of its instances). Returns at once: the loop's end (and the lease's release, which
   * ends the follow) does not wait for it.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const timer = setTimeout(() => this.following.abort(VIEW_CLOSED), FOLLOW_END_WAIT_MS);
    timer.unref();
    const clear = (): void => clearTimeout(timer);
    this.follower.then(clear, clear);
  }

  /** Settles once the follow has ended (by the log, or cancelled), after close(). */
  get followEnded(): Promise<void> {
    return this.follower;
  }

  /**
   * Merges what an append stored. Its seqs may lie past events the follower has not delivered
   * yet (a client's append committed just before ours): those are read first, or merging past
   * them would drop them from the view for good.
   */
  private async mergeStored(stored: readonly Event[]): Promise<void> {
    const first = stored[0];
    if (first !== undefined && first.seq > this.lastSeq() + 1) this.merge(await this.ctx.log.readAfter(this.lastSeq()));
    this.merge(stored);
  }

  private merge(events: readonly Event[]): void {
    const before = this.lastSeq();
    for (const e of events) if (e.seq > this.lastSeq()) this.events.push(e);
    if (this.lastSeq() > before) for (const done of [...this.waiters]) done();
  }

  /**
   * Follows the log until close(), from the view's last event each time the stream ends or fails
   * (a session-log restart): without it the loop would stop seeing interrupts and workers' results.
   */
  private async follow(): Promise<void> {
    const signal = this.following.signal;
    for (let failures = 0; !signal.aborted && !this.closed; failures++) {
      try {
        // Without the view's own appends (it merges them from their answers): 5-6 messages a
        // text-only turn the log would send and this would decode only to drop. Ended by the log
        // when the lease is over, where cancelling it cost both sides a reset.
        for await (const { event } of this.ctx.log.watch(this.lastSeq(), signal, this.ctx.leaseEpoch, true)) {
          failures = 0;
          if (event === undefined || this.closed) continue;
          // Past the view's next seq: an append of its own whose answer is still on its way is
          // before it, read first (as mergeStored does).
          await this.mergeStored([event]);
          if (event.payload?.$case === "userInterrupt") this.onInterrupt();
        }
      } catch (err) {
        if (signal.aborted || this.closed) return;
        if (failures === 0) this.ctx.logger.warn({ err: MhError.from(err), sessionId: this.ctx.log.sessionId }, "following the log failed; following again");
      }
      // Ended by the log while the view is open: a lease the log saw run out that was extended
      // through another of its instances, or a log that stopped. Followed again.
      if (this.closed) return;
      // Ends early, without throwing, when the follow is cancelled.
      await sleep(backoffMs(REFOLLOW, failures + 1), signal);
    }
  }
}

/**
 * How long a closed view's follow waits for the log to end it before it is cancelled: the lease
 * left at a view's close runs out within LINGER_MARGIN_MAX_MS (0.5 s) of a linger that ran out,
 * and is given back or taken otherwise; this is that and room for a loaded machine's delays.
 */
const FOLLOW_END_WAIT_MS = 2_000;

/** Why a view stops following: made once, where abort() without a reason makes a DOMException (and its stack) per turn. */
const VIEW_CLOSED = new MhError("CANCELLED", "the session's view was closed");

/** Following again waits 50 ms, doubling per failure in a row up to 2 s; for as long as the loop runs. */
const REFOLLOW = retryPolicy({ initialIntervalMs: 50, maxIntervalMs: 2_000, jitter: 0, maxAttempts: Number.POSITIVE_INFINITY });
