/**
 * A watch's wait between reads (watch.ts): until a poke (an append heard, a recheck asked for, an
 * abort), the recheck period, or, for a watch that ends with its lease, that lease's end as last
 * learnt here, when the lease is over. News of the lease moved re-arms the wait rather than ending
 * it. A wait is one promise, with no async function around it, and one recheck timer serves all
 * of a watch's waits (refresh()ed): a watch waits once or more for every append it is told of.
 */

/** The lease a watch ends with: over, the time it runs out (performance.now()), or not known. */
export type WatchLease = "over" | number | undefined;

export interface LeaseEnd {
  get(): WatchLease;
  /** The lease ran out: the watch ends. */
  over(): void;
}

export class IdleWait {
  private done: (() => void) | undefined;
  /** The current wait ends at the lease's end, before the recheck period. */
  private endsFirst = false;
  private endTimer: NodeJS.Timeout | undefined;
  private recheckTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly recheckMs: number,
    private readonly signal: AbortSignal,
    private readonly lease: LeaseEnd,
  ) {}

  /** Undefined when there is nothing to wait for (aborted, the lease over or run out); else resolves as the wait ends. */
  wait(): Promise<void> | undefined {
    if (!this.arm()) return undefined;
    return new Promise<void>((resolve) => {
      this.done = resolve;
    });
  }

  /** A poke ends the current wait; news of the lease waits on, to its new end. Between waits, nothing. */
  wake(why: "poke" | "lease"): void {
    if (this.done === undefined) return;
    if (why === "poke") return this.finish();
    clearTimeout(this.endTimer);
    this.endTimer = undefined;
    if (!this.arm()) this.finish();
  }

  /** The watch ended: no timer is left. */
  stop(): void {
    clearTimeout(this.endTimer);
    clearTimeout(this.recheckTimer);
  }

  private arm(): boolean {
    if (this.signal.aborted) return false;
    const lease = this.lease.get();
    if (lease === "over") return false;
    const untilEnd = typeof lease === "number" ? lease - performance.now() : Number.POSITIVE_INFINITY;
    if (untilEnd <= 0) {
      this.lease.over();
      return false;
    }
    this.endsFirst = untilEnd < this.recheckMs;
    if (this.endsFirst) {
      this.endTimer = setTimeout(() => {
        // The timer's clock may run a hair behind performance.now(): its lease ran out.
        this.lease.over();
        this.finish();
      }, Math.ceil(untilEnd));
    } else if (this.recheckTimer === undefined) {
      this.recheckTimer = setTimeout(() => {
        // Fired between waits, or during one bounded by the lease's end: not this wait's.
        if (!this.endsFirst) this.finish();
      }, this.recheckMs);
    } else {
      this.recheckTimer.refresh();
    }
    return true;
  }

  private finish(): void {
    clearTimeout(this.endTimer);
    this.endTimer = undefined;
    const done = this.done;
    this.done = undefined;
    done?.();
  }
}
