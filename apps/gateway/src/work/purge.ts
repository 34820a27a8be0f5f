/**
 * Stopped work items are history: a worker never polls them again and their sessions tokens are
 * dead. They are kept MH_GATEWAY_WORK_RETENTION_SECONDS after they stopped (work.list and
 * work.retrieve still show them) and then deleted, with their tokens (ON DELETE CASCADE), so the
 * queue of a busy environment does not grow without end. Every gateway instance sweeps; the
 * DELETE is idempotent, so instances never need to agree on who does.
 */
import type { Queryable } from "@metaharness/db";
import type { Logger } from "@metaharness/service-kit";

/** Deletes items stopped before `before`; returns how many. */
export async function purgeStoppedWork(db: Queryable, before: Date): Promise<number> {
  const { rowCount } = await db.query("DELETE FROM gw_work WHERE state = 'stopped' AND stopped_at < $1", [before]);
  return rowCount;
}

export interface WorkPurgeOptions {
  /** Kept this long after stopping; 0 keeps them forever (no sweep). */
  readonly retentionSeconds: number;
  readonly everyMs: number;
  readonly now: () => Date;
}

/** Sweeps every `everyMs` (the first sweep at once); returns the stop function. */
export function startWorkPurge(db: Queryable, logger: Logger, opts: WorkPurgeOptions): () => Promise<void> {
  if (opts.retentionSeconds === 0) return () => Promise.resolve();
  let running: Promise<void> = Promise.resolve();
  const sweep = (): void => {
    running = (async () => {
      const before = new Date(opts.now().getTime() - opts.retentionSeconds * 1000);
      try {
        const purged = await purgeStoppedWork(db, before);
        if (purged > 0) logger.info({ purged, stopped_before: before.toISOString() }, "purged stopped work items");
      } catch (err) {
        logger.warn({ err }, "could not purge stopped work items; will try again");
      }
    })();
  };
  sweep();
  const timer = setInterval(() => {
    void running.then(sweep);
  }, opts.everyMs).unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
