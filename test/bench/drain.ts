/**
 * Drain: how fast the outbox relay catches up on a backlog, e.g. after a Kafka outage, measured
 * from the relay's start to the last event received by a real consumer. The database first gets
 * the history of a long-running service (a bulk-loaded session, analyzed), then a backlog is built
 * through gRPC with the relay off, and an instance with the relay on drains it. Twice, same size:
 * once with the outbox's statistics as a steady state leaves them (analyzed while the outbox was
 * nearly empty), once after ANALYZE outbox. Why: the relay's drain statement joins
 * outbox to events before its LIMIT, so its plan, and the cost of each 500-row batch, depends
 * on what the planner believes about the outbox. The EXPLAIN of that statement against each
 * backlog is printed with the figures. No target: the time to recover from an outage.
 */
import pg from "pg";
import type { Event } from "@metaharness/proto";
import { OUTBOX_BATCH_SQL, OUTBOX_SHARDS } from "@metaharness/session-log";
import { readTopic, type Received, type TopicReader } from "../support/kafka.js";
import { explain, type PlanSummary } from "./lib/explain.js";
import { populateSession } from "./lib/populate.js";
import { DRAIN_SQL, drainParams } from "./lib/relay-sql.js";
import { exactly, ms, rate, type Bench, type Cell, type Check } from "./lib/report.js";
import { benchEvent, startBenchLog, type BenchLog } from "./lib/service.js";

const SESSIONS = 20;
const BATCHES_PER_SESSION = 25;
const BATCH = 100;
const BACKLOG = SESSIONS * BATCHES_PER_SESSION * BATCH;
const DRAIN_TIMEOUT_MS = 120_000;
/** Events already in the log before the outage (one bulk-loaded session). */
const HISTORY = Number(process.env["MH_BENCH_DRAIN_HISTORY"] ?? 500_000);

interface Round {
  readonly label: string;
  /** The relay's statement against the full backlog (its first batch). */
  readonly plan: PlanSummary;
  /** The bounded form of the same batch, for comparison; the relay does not run it. */
  readonly boundedPlan: PlanSummary;
  readonly drainMs: number;
  readonly eventsPerSecond: number;
  readonly received: number;
}

const keyOf = (e: Event): string => `${e.sessionId}:${e.seq}`;

function planCells(plan: PlanSummary): Cell[] {
  return [ms(plan.executionMs), plan.seqScans.join(", ") || "none", plan.shape];
}

async function buildBacklog(bench: BenchLog): Promise<Set<string>> {
  const sessions = await bench.newSessions(SESSIONS);
  const keys = new Set<string>();
  await Promise.all(
    sessions.map(async (sessionId) => {
      for (let i = 0; i < BATCHES_PER_SESSION; i++) {
        const { events } = await bench.client.emitEvents({ sessionId, events: Array.from({ length: BATCH }, benchEvent) });
        for (const e of events) keys.add(keyOf(e));
      }
    }),
  );
  return keys;
}

/** Resolves with the receive time of the last wanted record, or NaN if they did not all arrive. */
async function lastArrival(reader: TopicReader, wanted: ReadonlySet<string>): Promise<{ at: number; count: number }> {
  const seen = new Set<string>();
  let scanned = 0;
  let at = Number.NaN;
  const done = (received: Received[]): boolean => {
    for (; scanned < received.length; scanned++) {
      const r = received[scanned];
      if (r === undefined || !wanted.has(keyOf(r.event))) continue;
      seen.add(keyOf(r.event));
      at = r.receivedAt;
    }
    return seen.size === wanted.size;
  };
  const ok = await reader.waitFor(done, DRAIN_TIMEOUT_MS).then(
    () => true,
    () => false,
  );
  return { at: ok ? at : Number.NaN, count: seen.size };
}

async function round(bench: BenchLog, pool: pg.Pool, reader: TopicReader, label: string, analyze: boolean): Promise<Round> {
  const wanted = await buildBacklog(bench);
  if (analyze) await pool.query("ANALYZE outbox");
  const shards = Array.from({ length: OUTBOX_SHARDS }, (_, i) => i);
  const params = drainParams(shards, bench.config.relayBatchSize);
  const plan = await explain(pool, DRAIN_SQL, params.plain);
  const boundedPlan = await explain(pool, OUTBOX_BATCH_SQL, params.bounded);
  const startedAt = Date.now();
  if (bench.inProcess === undefined) throw new Error("the drain benchmark starts its relay as an in-process replica");
  const relay = await bench.inProcess.startReplica({ MH_RELAY_ENABLED: "true" });
  try {
    const { at, count } = await lastArrival(reader, wanted);
    const drainMs = (Number.isNaN(at) ? Date.now() : at) - startedAt;
    return { label, plan, boundedPlan, drainMs, eventsPerSecond: (count * 1000) / drainMs, received: count };
  } finally {
    await relay.handle.stop();
  }
}

export const drainBench: Bench = {
  name: "drain",
  title: `relay catching up on a backlog of ${rate(BACKLOG)} events`,
  async run() {
    const bench = await startBenchLog({ env: { MH_RELAY_ENABLED: "false" }, inProcess: true });
    const pool = new pg.Pool({ connectionString: bench.dbUrl, max: 1 });
    let reader: TopicReader | undefined;
    try {
      reader = await readTopic(bench.topic);
      const [history] = await bench.newSessions(1);
      if (history === undefined) throw new Error("no session");
      await populateSession(bench.dbUrl, history, HISTORY, benchEvent());
      // A long-running service's outbox is analyzed by autovacuum while it is nearly empty.
      await pool.query("ANALYZE outbox");
      const stale = await round(bench, pool, reader, "steady-state statistics", false);
      const fresh = await round(bench, pool, reader, "after ANALYZE outbox", true);
      const rounds = [stale, fresh];
      const checks: Check[] = rounds.map((r) => exactly(`events lost, ${r.label}`, BACKLOG - r.received, 0));
      return {
        name: "drain",
        title: this.title,
        tables: [
          {
            title: "drain from relay start to the last event received by a consumer",
            columns: ["outbox statistics", "events", "seconds", "events/s"],
            rows: rounds.map((r) => [r.label, r.received, (r.drainMs / 1000).toFixed(1), rate(r.eventsPerSecond)]),
          },
          {
            title: `one ${bench.config.relayBatchSize}-row batch against the full backlog, EXPLAIN (ANALYZE)`,
            columns: ["outbox statistics", "statement", "execution ms", "seq scans", "plan"],
            rows: rounds.flatMap((r) => [
              [r.label, "before: join, then LIMIT", ...planCells(r.plan)],
              ["", "outbox/batch.ts: LIMIT, then join", ...planCells(r.boundedPlan)],
            ]),
          },
        ],
        checks,
        notes: [
          `history: ${rate(HISTORY)} events bulk-loaded and analyzed; backlog: ${SESSIONS} sessions x ${BATCHES_PER_SESSION} EmitEvents of ${BATCH}, appended with the relay off`,
          `relay: batch ${bench.config.relayBatchSize}, all ${OUTBOX_SHARDS} shards; autovacuum may analyze the outbox during a drain and change its plan midway`,
        ],
        data: { history: HISTORY, backlog: BACKLOG, rounds },
      };
    } finally {
      await reader?.close();
      await pool.end();
      await bench.stop();
    }
  },
};
