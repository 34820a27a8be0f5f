/**
 * What this instance learns of sessions' leases as it serves them (an acquire, a renewal, a
 * release, an append's lease_left_ms), told to the watches that end with a lease
 * (WatchEventsRequest.end_with_lease): a harness's follow of the session it drives then ends when
 * its lease does, with OK, where its holder cancelled it (an RST_STREAM, and the work of a
 * cancelled call on both sides, once a session). Nothing is kept: a fact reaches the watches
 * subscribed when it is told, and a session nobody watches that way costs a map lookup.
 */

/** A lease as one answer of this instance left it. */
export interface LeaseFact {
  /** Whose lease: the epoch the answer names; undefined when it does not (an append without one). */
  readonly epoch?: number | undefined;
  /** How long it runs from now, as the database counted it; 0: over (released, run out, none held). */
  readonly leftMs: number;
}

export type LeaseListener = (fact: LeaseFact) => void;

export class LeaseNews {
  private readonly bySession = new Map<string, Set<LeaseListener>>();

  /** Calls `listener` with every fact told of the session's lease from now on. Returns the unsubscribe function. */
  subscribe(sessionId: string, listener: LeaseListener): () => void {
    let set = this.bySession.get(sessionId);
    if (set === undefined) {
      set = new Set();
      this.bySession.set(sessionId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.bySession.delete(sessionId);
    };
  }

  tell(sessionId: string, fact: LeaseFact): void {
    const set = this.bySession.get(sessionId);
    if (set !== undefined) for (const listener of set) listener(fact);
  }
}

/**
 * Where a watch that ends with the lease of `epoch` stands after `fact`: "over", or the time (ms
 * on `now`'s clock) it now runs until, or undefined when the fact says nothing of that lease (an
 * earlier epoch's, or a lease the answer did not name that is still held).
 */
export function leaseAfter(epoch: number, fact: LeaseFact, now: number): "over" | number | undefined {
  if (fact.epoch === undefined) return fact.leftMs <= 0 ? "over" : undefined;
  if (fact.epoch > epoch) return "over";
  if (fact.epoch < epoch) return undefined;
  return fact.leftMs <= 0 ? "over" : now + fact.leftMs;
}
