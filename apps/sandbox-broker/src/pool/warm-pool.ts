/**
 * The warm pool: N bubblewrap sandboxes with the default limits, started ahead of need, so a
 * Provision that asks for the defaults takes one (no spawn, no wait for the agent) and pays only
 * for recording it. Pooled sandboxes belong to no session and are not in Postgres until taken.
 * A pooled sandbox that dies is replaced; a failing start backs off instead of spinning. The pool
 * counts against the broker's cap (MH_MAX_SANDBOXES): it holds at most what the cap leaves over
 * the sessions' sandboxes, so taking from it never lets the broker run more than the cap.
 */
import type { Logger } from "@metaharness/service-kit/logging";
import type { LocalSandbox } from "../driver/local-sandbox.js";
import { newSandboxId } from "../util/ids.js";

export interface Pooled {
  readonly id: string;
  readonly runtime: LocalSandbox;
}

const RETRY_MS = 1_000;
const REFILL_DELAY_MS = 2;

export class WarmPool {
  private readonly ready: Pooled[] = [];
  /** Starts under way; stop() waits for them, so none outlives the pool. */
  private readonly starting = new Set<Promise<void>>();
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    /** How many sandboxes the pool may hold now: its size, less what the cap does not leave. */
    private readonly size: () => number,
    private readonly start: (id: string) => Promise<LocalSandbox>,
    private readonly logger: Logger,
  ) {}

  /** Begins filling; returns at once. */
  fill(): void {
    while (!this.stopped && this.ready.length + this.starting.size < this.size()) {
      const id = newSandboxId();
      const started: Promise<void> = this.start(id).then(
        (runtime) => {
          this.starting.delete(started);
          return this.onStarted({ id, runtime });
        },
        (err: unknown) => {
          this.starting.delete(started);
          this.logger.warn({ err }, "could not start a warm sandbox; retrying");
          this.retryTimer ??= setTimeout(() => {
            this.retryTimer = undefined;
            this.fill();
          }, RETRY_MS);
          this.retryTimer.unref();
        },
      );
      this.starting.add(started);
    }
  }

  /**
   * A ready sandbox, or undefined when the pool is empty. The replacement starts on a later turn
   * of the event loop: spawning blocks the loop for a few ms (fork of a big process), which the
   * Provision that took this one should not wait for.
   */
  take(): Pooled | undefined {
    const pooled = this.ready.shift();
    this.refillSoon();
    return pooled;
  }

  /** Fills on a later turn of the event loop (see take), e.g. once the cap leaves room again. */
  refillSoon(): void {
    setTimeout(() => this.fill(), REFILL_DELAY_MS).unref();
  }

  get available(): number {
    return this.ready.length;
  }

  /** Stops ready sandboxes the pool may no longer hold (the cap's room shrank); started ones over it are stopped as they come up. */
  async trim(): Promise<void> {
    const over = this.ready.length + this.starting.size - Math.max(0, this.size());
    const surplus = this.ready.splice(0, Math.max(0, Math.min(over, this.ready.length)));
    await Promise.all(surplus.map((p) => p.runtime.stop("the warm pool shrank under the broker's cap")));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    await Promise.allSettled([...this.starting]); // each stops itself once it sees `stopped`
    const all = this.ready.splice(0);
    await Promise.all(all.map((p) => p.runtime.stop("the broker shut down")));
  }

  private async onStarted(pooled: Pooled): Promise<void> {
    if (this.stopped) {
      await pooled.runtime.stop("the broker shut down");
      return;
    }
    if (this.ready.length + this.starting.size >= this.size()) {
      await pooled.runtime.stop("the warm pool shrank under the broker's cap");
      return;
    }
    this.ready.push(pooled);
    void pooled.runtime.lost.then((reason) => {
      const at = this.ready.indexOf(pooled);
      if (at < 0) return; // taken meanwhile: its owner handles the loss
      this.ready.splice(at, 1);
      this.logger.warn({ sandbox_id: pooled.id, reason }, "a warm sandbox died; replacing it");
      this.fill();
    });
  }
}
