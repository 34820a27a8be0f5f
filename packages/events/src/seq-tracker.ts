/**
 * For consumers of the session-events topic (analytics, projections): the topic carries every
 * appended event keyed by its session, in seq order per session, at least once. A relay that
 * retries a publish, or a consumer that restarts from its last committed offset, sees some
 * events again; a consumer that starts after the topic's retention dropped a session's first
 * records, or that subscribes from the end, sees a session from the middle. Seqs are dense (1, 2,
 * 3, ... per session), so the last seq processed per session tells them apart: the next one is
 * new, anything at or below it a duplicate to skip, anything beyond it a gap, whose events the
 * consumer can read from the session log (GetEvents after_seq) if it needs them. Store the last
 * seqs with what the consumer computed, in one transaction, and start from them after a restart.
 */
export type SeqVerdict =
  | { readonly kind: "next" }
  | { readonly kind: "duplicate" }
  /** Events `from`..`to` (inclusive) never arrived; this one is processed, and the session goes on from it. */
  | { readonly kind: "gap"; readonly from: number; readonly to: number };

export class SeqTracker {
  private readonly last: Map<string, number>;

  /** `initial`: the last seq processed per session, as stored with the consumer's results. */
  constructor(initial: Iterable<readonly [string, number]> = []) {
    this.last = new Map(initial);
  }

  /** What event `seq` of `sessionId` is; `next` and `gap` record it as processed. */
  accept(sessionId: string, seq: number): SeqVerdict {
    if (!Number.isSafeInteger(seq) || seq < 1) throw new RangeError(`seq must be a positive integer, got ${seq}`);
    const last = this.last.get(sessionId) ?? 0;
    if (seq <= last) return { kind: "duplicate" };
    this.last.set(sessionId, seq);
    return seq === last + 1 ? { kind: "next" } : { kind: "gap", from: last + 1, to: seq - 1 };
  }

  /** The last seq processed of `sessionId` (0: none). */
  lastSeq(sessionId: string): number {
    return this.last.get(sessionId) ?? 0;
  }

  /**
   * Drops a session's last seq, so memory does not grow without bound: only once its records can
   * no longer come again (they left the topic). Its termination is not that moment: until then a
   * redelivered record of a forgotten session counts as new.
   */
  forget(sessionId: string): void {
    this.last.delete(sessionId);
  }

  /** Every session's last seq, to store. */
  entries(): IterableIterator<[string, number]> {
    return this.last.entries();
  }
}
