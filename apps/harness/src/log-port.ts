/**
 * The session log as the harness sees it: read the whole history (paged), follow it live, append
 * under the lease epoch, and publish ephemeral deltas. Every write carries the epoch, so a harness
 * whose lease was taken over is refused (ABORTED) on its next write and stops. An append the log
 * could not take (it restarts, too many appends are waiting) is sent again, unchanged, for a few
 * seconds instead of ending the turn: see `emit`.
 */
import { MhError, retry, retryPolicy, type RetryPolicy } from "@metaharness/errors";
import type { Event, EventDelta, Session, SessionLogService } from "@metaharness/proto";
import type { PromiseClient } from "@metaharness/service-kit/grpc";

export type SessionLogClient = PromiseClient<typeof SessionLogService>;

const PAGE = 1000;

/** The least time an attempt is given, even when the retry window is nearly spent. */
const MIN_ATTEMPT_MS = 500;
/** How long an append is retried: a restart of the log; longer than the lease's TTL, so the lease decides. */
export const APPEND_RETRY_MS = 5_000;

/**
 * Appends are retried on failures of the log itself, not of the request: the same append may
 * succeed a moment later. Not ABORTED (from the log: the lease was taken over), and not a message
 * over a size limit (the policy's rule), which no retry fixes; a log with too many appends waiting
 * (RESOURCE_EXHAUSTED without a size limit) takes this one a moment later. Jittered: harnesses
 * refused together would otherwise come back together, and be refused together again.
 */
const APPEND_POLICY = retryPolicy({
  initialIntervalMs: 50,
  maxIntervalMs: 1_000,
  maxAttempts: Number.POSITIVE_INFINITY,
  maxElapsedMs: APPEND_RETRY_MS,
  retryableCodes: new Set(["UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED"]),
});

export class LogPort {
  /** The highest seq this port has read, watched or appended (ListActive reports it). */
  lastSeq = 0;
  /**
   * The highest seq of this port's own appends: what came after it (read or watched) the loop has
   * not answered yet, whatever it has seen (supervisor.ts fail).
   */
  lastAppendedSeq = 0;
  private readonly appendPolicy: RetryPolicy;
  private held: Event[] | undefined;
  private deltasForAppend: EventDelta[] | undefined;

  constructor(
    readonly client: SessionLogClient,
    readonly sessionId: string,
    appendRetryMs = APPEND_RETRY_MS,
  ) {
    // The default's policy is made once: a port is made per session.
    this.appendPolicy = appendRetryMs === APPEND_RETRY_MS ? APPEND_POLICY : retryPolicy({ ...APPEND_POLICY, maxElapsedMs: appendRetryMs });
  }

  async session(): Promise<Session> {
    const { session } = await this.client.getSession({ sessionId: this.sessionId });
    if (session === undefined) throw new MhError("INTERNAL", "GetSession returned no session");
    return session;
  }

  /**
   * The session's whole log as AcquireLease returned it (a short session): the first read is
   * answered from it, without a round trip. Only the first: later reads look for what was
   * appended since.
   */
  hold(history: Event[]): void {
    this.held = history;
    this.saw(history);
  }

  /** Whether the whole log is held from the lease, for the first read (a strategy then needs no horizon lookup). */
  get holdsHistory(): boolean {
    return this.held !== undefined;
  }

  /** Every event after `afterSeq`, oldest first. */
  async readAfter(afterSeq: number): Promise<Event[]> {
    const held = this.held;
    if (held !== undefined) {
      this.held = undefined;
      return held.filter((e) => e.seq > afterSeq);
    }
    const out: Event[] = [];
    let cursor = afterSeq;
    for (;;) {
      const page = await this.client.getEvents({
        sessionId: this.sessionId,
        position: { $case: "afterSeq", value: cursor },
        limit: PAGE,
        types: [],
      });
      out.push(...page.events);
      this.saw(page.events);
      const last = page.events[page.events.length - 1];
      if (!page.hasMore || last === undefined) return out;
      cursor = last.seq;
    }
  }

  /** A positional slice, for the windowed context strategy's re-read tool; `hasMore` as the log says. */
  async slice(
    position: { afterSeq: number } | { beforeSeq: number },
    limit: number,
    types: string[] = [],
  ): Promise<{ events: Event[]; hasMore: boolean }> {
    const page = await this.client.getEvents({
      sessionId: this.sessionId,
      position: "afterSeq" in position ? { $case: "afterSeq", value: position.afterSeq } : { $case: "beforeSeq", value: position.beforeSeq },
      limit,
      types,
    });
    return { events: page.events, hasMore: page.hasMore };
  }

  /**
   * Appends atomically under the lease; returns the events as stored (with seqs). With
   * `expectedSeq`, only if the session's last event is still that one (else FAILED_PRECONDITION
   * on expected_seq). A transient failure is retried with backoff for `appendRetryMs`. That is
   * safe because the events keep their ids: if an earlier attempt was written and only its answer
   * was lost, the log returns that append's seqs as duplicates and writes nothing (and checks
   * `expectedSeq` only when something is new); the lease epoch is checked on every attempt.
   * With `leaseTtlMs` the lease of `leaseEpoch` runs that long from the append once it lands.
   */
  async emit(events: Event[], leaseEpoch: number, expectedSeq?: number, leaseTtlMs?: number): Promise<Event[]> {
    if (events.length === 0) return [];
    // Without its id an event would be new to the log at each attempt: written twice.
    if (events.some((e) => e.id === "")) throw new MhError("INTERNAL", "the harness appends only events with ids");
    const deltas = this.deltasForAppend === undefined ? undefined : { deltas: this.deltasForAppend };
    this.deltasForAppend = undefined;
    return retry(this.appendPolicy, async ({ attempt, remainingMs }) => {
      const deadlineMs = Math.max(MIN_ATTEMPT_MS, remainingMs);
      // Deltas with the first attempt only: a failed one may have published them already.
      const request = { sessionId: this.sessionId, events, leaseEpoch, expectedSeq, leaseTtlMs, ...(attempt === 1 && deltas !== undefined ? { deltas } : {}) };
      const res = await this.client.emitEvents(request, { deadlineMs });
      this.saw(res.events);
      for (const e of res.events) if (e.seq > this.lastAppendedSeq) this.lastAppendedSeq = e.seq;
      return res.events;
    });
  }

  /**
   * Live events after `afterSeq` until `signal` aborts. With `exceptLeaseEpoch` (the caller's
   * lease) the log leaves out most of what the caller appended under it (it has those from
   * emit()): a seq may then come past the one expected. With `endWithLease` too, the log ends the
   * stream once it learns that lease is over (WatchEventsRequest.end_with_lease).
   */
  async *watch(afterSeq: number, signal: AbortSignal, exceptLeaseEpoch?: number, endWithLease = false): AsyncIterable<{ event: Event | undefined }> {
    const live = this.client.watchEvents(
      { sessionId: this.sessionId, afterSeq, types: [], includeDeltas: false, batchDeltas: false, fromHead: false, exceptLeaseEpoch, endWithLease },
      { signal, deadlineMs: undefined },
    );
    for await (const item of live) {
      if (item.event !== undefined) this.saw([item.event]);
      yield item;
    }
  }

  private saw(events: readonly Event[]): void {
    for (const e of events) if (e.seq > this.lastSeq) this.lastSeq = e.seq;
  }

  /**
   * Deltas the next append carries (EmitEventsRequest.deltas): the log publishes them before it
   * appends, one call where a PublishDeltas and the append were two. Best effort, as a publish is.
   */
  sendWithNextAppend(deltas: EventDelta[]): void {
    this.deltasForAppend = deltas.length > 0 ? deltas : undefined;
  }

  async publishDeltas(deltas: EventDelta[]): Promise<void> {
    if (deltas.length > 0) await this.client.publishDeltas({ sessionId: this.sessionId, deltas });
  }
}
