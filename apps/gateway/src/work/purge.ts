/**
 * Stopped work items are history: a worker never polls them again and their sessions tokens are
 * dead. They are kept MH_GATEWAY_WORK_RETENTION_SECONDS after they stopped (work.list and
 * work.retrieve still show them) and then deleted, with their tokens (ON DELETE CASCADE), so the
 * queue of a busy environment does not grow without end. Every gateway instance sweeps; the
 * DELETE is idempotent, so instances never need to agree on who does.
 */
import type { Queryable } from "@metaharness/db";
import type { Logger } from "@metaharness/service-kit/logging";

const PURGE_SLICE = 1000;

/** Deletes up to `limit` items stopped before `before`; returns how many. */
export async function purgeStoppedWork(db: Queryable, before: Date, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM gw_work WHERE work_id IN (
       SELECT work_id FROM gw_work WHERE state = 'stopped' AND stopped_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [before, limit],
  );
  return rowCount;
}

export interface WorkPurgeOptions {
  /** Kept this long after stopping; 0 keeps them forever (no sweep). */
  readonly retentionSeconds: number;
  readonly everyMs: number;
  readonly now: () => Date;
}

/** Sweeps at once, then `everyMs` after each sweep ends (never two at a time); returns the stop function. */
export function startWorkPurge(db: Queryable, logger: Logger, opts: WorkPurgeOptions): () => Promise<void> {
  if (opts.retentionSeconds === 0) return () => Promise.resolve();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const sweep = async (): Promise<void> => {
    const before = new Date(opts.now().getTime() - opts.retentionSeconds * 1000);
    try {
      let purged = 0;
      // In slices, so a large backlog never holds many row locks at once.
      for (let n = PURGE_SLICE; n === PURGE_SLICE && !stopped; purged += n) n = await purgeStoppedWork(db, before, PURGE_SLICE);
      if (purged > 0) logger.info({ purged, stopped_before: before.toISOString() }, "purged stopped work items");
    } catch (err) {
      logger.warn({ err }, "could not purge stopped work items; will try again");
    }
  };
  let running = sweep();
  const next = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = sweep().finally(next);
    }, opts.everyMs).unref();
  };
  void running.finally(next);
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}
