/**
 * What Postgres backends wait on while a benchmark runs: pg_stat_activity (and the locks not yet
 * granted, from pg_locks) sampled every few milliseconds from one extra connection. The average
 * number of active backends per wait event says where database time goes: "CPU" (no wait), WAL
 * flushes (IO:WALSync, LWLock:WALWrite), row locks (Lock:transactionid, Lock:tuple) or a global
 * lock such as the one NOTIFY takes at commit (Lock:object on pg_database).
 */
import pg from "pg";
import { sleep } from "./stats.js";

const SAMPLE_EVERY_MS = 20;

export interface WaitProfile {
  readonly samples: number;
  /** Average active backends per wait event, most first. "CPU" means running, not waiting. */
  readonly byWait: ReadonlyArray<{ readonly wait: string; readonly backends: number }>;
  /** Average backends waiting per ungranted lock, most first. */
  readonly byLock: ReadonlyArray<{ readonly lock: string; readonly backends: number }>;
}

const WAITS = `
  SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS key, count(*)::int AS n
    FROM pg_stat_activity
   WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
   GROUP BY 1`;

const LOCKS = `
  SELECT l.locktype || ' ' || coalesce(l.classid::regclass::text, l.relation::regclass::text, '')
         || coalesce(' objid=' || l.objid, '') || ' ' || l.mode AS key, count(*)::int AS n
    FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
   WHERE NOT l.granted AND a.datname = current_database()
   GROUP BY 1`;

function averages(totals: Map<string, number>, samples: number): Array<{ key: string; avg: number }> {
  return [...totals]
    .map(([key, n]) => ({ key, avg: n / Math.max(1, samples) }))
    .sort((a, b) => b.avg - a.avg);
}

/** Starts sampling the database at `databaseUrl`; `stop()` ends it and returns the profile. */
export async function sampleWaits(databaseUrl: string): Promise<{ stop(): Promise<WaitProfile> }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const waits = new Map<string, number>();
  const locks = new Map<string, number>();
  let samples = 0;
  let running = true;
  const add = (into: Map<string, number>, rows: Array<{ key: string; n: number }>): void => {
    for (const r of rows) into.set(r.key, (into.get(r.key) ?? 0) + r.n);
  };
  const loop = (async () => {
    while (running) {
      add(waits, (await client.query<{ key: string; n: number }>(WAITS)).rows);
      add(locks, (await client.query<{ key: string; n: number }>(LOCKS)).rows);
      samples += 1;
      await sleep(SAMPLE_EVERY_MS);
    }
  })();
  return {
    async stop() {
      running = false;
      try {
        await loop;
      } finally {
        await client.end();
      }
      return {
        samples,
        byWait: averages(waits, samples).map((a) => ({ wait: a.key, backends: a.avg })),
        byLock: averages(locks, samples).map((a) => ({ lock: a.key, backends: a.avg })),
      };
    },
  };
}
