/**
 * Group commit for writes that arrive concurrently: items queue here and are written together,
 * one `write` call (one statement, one transaction, one WAL flush) per batch, instead of one
 * transaction each. A batch goes out as soon as a flush slot is free, so there is no timer and
 * no added latency when the database keeps up; under load, items arriving during a flush ride
 * the next one (the same shape as NotifyBatcher, with results).
 *
 * Each item gets its own outcome. `write` reports an item's own failure (a conflict, a failed
 * precondition) in its slot without failing the others; if `write` itself throws for a batch of
 * several items, each item is written again alone, so an item that breaks the statement fails
 * only itself.
 */
import { MhError } from "@metaharness/errors";

export type WriteOutcome<R> = { readonly ok: true; readonly value: R } | { readonly ok: false; readonly error: Error };

export interface WriteBatcherOptions<I, R> {
  /** Writes `items` together; returns exactly one outcome per item, in order. */
  readonly write: (items: readonly I[]) => Promise<ReadonlyArray<WriteOutcome<R>>>;
  /** The most items in one batch. */
  readonly maxItems: number;
  /** The most total weight (e.g. bytes) in one batch; a heavier item goes alone. */
  readonly maxWeight: number;
  readonly weigh: (item: I) => number;
  /** Batches written at the same time. */
  readonly maxInFlight: number;
  /** Items waiting beyond this are refused with RESOURCE_EXHAUSTED instead of queueing without bound. */
  readonly maxQueued: number;
}

interface Pending<I, R> {
  readonly item: I;
  readonly weight: number;
  readonly resolve: (value: R) => void;
  readonly reject: (error: Error) => void;
}

export class WriteBatcher<I, R> {
  private readonly queue: Array<Pending<I, R>> = [];
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly opts: WriteBatcherOptions<I, R>) {}

  write(item: I): Promise<R> {
    if (this.queue.length >= this.opts.maxQueued) {
      return Promise.reject(
        new MhError("RESOURCE_EXHAUSTED", `${this.queue.length} writes are already waiting; try again shortly`),
      );
    }
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, weight: this.opts.weigh(item), resolve, reject });
      this.pump();
    });
  }

  /** Resolves once nothing is queued or being written (tests, shutdown). */
  idle(): Promise<void> {
    if (this.inFlight === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (this.inFlight < this.opts.maxInFlight && this.queue.length > 0) {
      const batch = this.take();
      this.inFlight += 1;
      void this.flush(batch).then(() => {
        this.inFlight -= 1;
        this.pump();
        if (this.inFlight === 0 && this.queue.length === 0) for (const wake of this.idleWaiters.splice(0)) wake();
      });
    }
  }

  private take(): Array<Pending<I, R>> {
    const batch: Array<Pending<I, R>> = [];
    let weight = 0;
    for (const next of this.queue) {
      if (batch.length > 0 && (batch.length >= this.opts.maxItems || weight + next.weight > this.opts.maxWeight)) break;
      batch.push(next);
      weight += next.weight;
    }
    this.queue.splice(0, batch.length);
    return batch;
  }

  /** Settles every item of `batch`; never rejects. */
  private async flush(batch: ReadonlyArray<Pending<I, R>>): Promise<void> {
    try {
      settle(batch, await this.opts.write(batch.map((p) => p.item)));
      return;
    } catch (err) {
      if (batch.length === 1) {
        batch[0]?.reject(asError(err));
        return;
      }
    }
    // The batch as a whole failed: find out whose fault it was by writing each item alone.
    for (const p of batch) {
      try {
        settle([p], await this.opts.write([p.item]));
      } catch (err) {
        p.reject(asError(err));
      }
    }
  }
}

function settle<I, R>(batch: ReadonlyArray<Pending<I, R>>, outcomes: ReadonlyArray<WriteOutcome<R>>): void {
  if (outcomes.length !== batch.length) {
    const err = new MhError("INTERNAL", `a batch write returned ${outcomes.length} outcomes for ${batch.length} items`);
    for (const p of batch) p.reject(err);
    return;
  }
  batch.forEach((p, i) => {
    const o = outcomes[i];
    if (o?.ok === true) p.resolve(o.value);
    else p.reject(o?.error ?? new MhError("INTERNAL", "missing outcome"));
  });
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
