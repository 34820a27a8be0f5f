/**
 * Wakes long polls when work is queued in their environment: at once for an item queued by this
 * instance, and through batched NOTIFY / LISTEN for one queued by another gateway instance. A
 * wake only says "claim again"; a poll that misses one (a lost NOTIFY, a lease that lapsed) finds
 * the item at its next poll, which a worker makes within seconds.
 */
import { NotifyBatcher, ResilientListener, type Db } from "@metaharness/db";
import type { Logger } from "@metaharness/service-kit/logging";

/** Items are environment ids. */
export const WORK_CHANNEL = "mh_gw_work";

export class WorkSignals {
  private readonly waiting = new Map<string, Set<() => void>>();
  private readonly batcher: NotifyBatcher;
  private readonly listener: ResilientListener;
  private stopped = false;

  constructor(db: Db, logger: Logger) {
    this.batcher = new NotifyBatcher(db, WORK_CHANNEL, logger);
    this.listener = new ResilientListener(
      db,
      WORK_CHANNEL,
      (payload) => {
        for (const environmentId of this.batcher.parse(payload) ?? []) this.wake(environmentId);
      },
      // Whatever was queued while the connection was gone: let every poll claim again.
      () => {
        for (const environmentId of [...this.waiting.keys()]) this.wake(environmentId);
      },
      logger,
    );
  }

  async start(): Promise<void> {
    await this.listener.start();
  }

  /** Work was queued in `environmentId`: wake its polls here, and soon on other instances. */
  announce(environmentId: string): void {
    this.wake(environmentId);
    this.batcher.enqueue(environmentId);
  }

  /** Resolves when work is announced for `environmentId`, after `ms`, or at stop. */
  wait(environmentId: string, ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      let set = this.waiting.get(environmentId);
      if (set === undefined) {
        set = new Set();
        this.waiting.set(environmentId, set);
      }
      const waiters = set;
      const done = (): void => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0 && this.waiting.get(environmentId) === waiters) this.waiting.delete(environmentId);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const environmentId of [...this.waiting.keys()]) this.wake(environmentId);
    await this.batcher.flush();
    await this.listener.stop();
  }

  private wake(environmentId: string): void {
    for (const done of [...(this.waiting.get(environmentId) ?? [])]) done();
  }
}
