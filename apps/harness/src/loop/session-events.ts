/**
 * A loop's view of its session's events: read once at the start, then kept current by following
 * the log (what clients append while the loop works), with the loop's own appends merged as they
 * return. `onInterrupt` fires the moment a user.interrupt arrives, so the running step can abort;
 * `changed` lets a step wait for what others append (a worker's tool results). Shared by every
 * HarnessLoop.
 */
import { MhError } from "@metaharness/errors";
import type { Event } from "@metaharness/proto";
import type { LoopContext } from "./harness-loop.js";

export class SessionEvents {
  readonly events: Event[] = [];
  private readonly following = new AbortController();
  private follower: Promise<void> = Promise.resolve();
  private readonly waiters = new Set<() => void>();

  private constructor(
    private readonly ctx: LoopContext,
    private readonly onInterrupt: () => void,
  ) {}

  /** Reads the history and starts following the log; close() when the loop ends. */
  static async open(ctx: LoopContext, onInterrupt: () => void): Promise<SessionEvents> {
    const view = new SessionEvents(ctx, onInterrupt);
    view.merge(await ctx.log.readAfter(0));
    const stop = (): void => view.following.abort();
    ctx.signal.addEventListener("abort", stop, { once: true });
    view.follower = view.follow().finally(() => ctx.signal.removeEventListener("abort", stop));
    return view;
  }

  lastSeq(): number {
    return this.events[this.events.length - 1]?.seq ?? 0;
  }

  /** Appends under the lease and merges the stored events. */
  async append(...events: Event[]): Promise<void> {
    this.merge(await this.ctx.log.emit(events, this.ctx.leaseEpoch));
  }

  /** Resolves once the view holds an event after `afterSeq`, or when `signal` aborts. */
  changed(afterSeq: number, signal: AbortSignal): Promise<void> {
    if (this.lastSeq() > afterSeq || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.waiters.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.waiters.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  async close(): Promise<void> {
    this.following.abort();
    await this.follower;
  }

  private merge(events: readonly Event[]): void {
    const before = this.lastSeq();
    for (const e of events) if (e.seq > this.lastSeq()) this.events.push(e);
    if (this.lastSeq() > before) for (const done of [...this.waiters]) done();
  }

  private async follow(): Promise<void> {
    const signal = this.following.signal;
    try {
      for await (const { event } of this.ctx.log.watch(this.lastSeq(), signal)) {
        if (event === undefined) continue;
        this.merge([event]);
        if (event.payload?.$case === "userInterrupt") this.onInterrupt();
      }
    } catch (err) {
      const e = MhError.from(err);
      if (e.code !== "CANCELLED" && !signal.aborted) this.ctx.logger.warn({ err: e }, "stopped following the log");
    }
  }
}
