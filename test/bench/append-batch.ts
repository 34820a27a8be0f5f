/**
 * Append batch: what Postgres takes to write one batch of appends, by the function that writes it,
 * side by side: mh_append (migrations/004, statements per batch) and mh_append_serial (003,
 * statements per request, which 004 keeps for one-request batches and retries). Why: concurrent
 * appends reach Postgres as one batch (store/appender.ts), and 16 sessions appending one event
 * each make a batch of 16 one-event requests, which 003 wrote with five statements per request.
 * The service scales out by replicas and Postgres does not, so its time per append is the
 * ceiling of a deployment. Batches are sent by the bench process over one connection, one at a
 * time, each its own transaction and commit; the two functions alternate batch by batch on the
 * same sessions, so drift and noise hit them alike. No target: the figures say which shapes the
 * per-batch function is for.
 */
import pg from "pg";
import { Event } from "@metaharness/proto";
import { APPEND_SERIAL_SQL, APPEND_SQL, appendParams, EVENTS_CHANNEL, shardOf } from "@metaharness/session-log";
import { LATENCY_COLUMNS, latencyCells, rate, runIfMain, type Bench, type Cell } from "./lib/report.js";
import { benchEvent, startBenchLog } from "./lib/service.js";
import { nowMs, summarize } from "./lib/stats.js";

/** Requests per batch and events per request: one session alone, 16 and 64 at once, big batches (the appender's cap is 1,000 events). */
const SHAPES: ReadonlyArray<readonly [number, number]> = [
  [1, 1],
  [16, 1],
  [64, 1],
  [4, 100],
  [10, 100],
];
const WARMUP_ROUNDS = 20;
const ROUNDS = 200;

const FUNCTIONS = [
  { name: "per batch (mh_append, 004)", sql: APPEND_SQL },
  { name: "per request (mh_append_serial, 003)", sql: APPEND_SERIAL_SQL },
] as const;

/** One batch as store/append.ts sends it: `requests` sessions, `events` new agent.message each. */
function batchParams(sessions: readonly string[], events: number): unknown[] {
  const createdAt = new Date();
  const all = sessions.flatMap((sessionId) => Array.from({ length: events }, () => ({ ...benchEvent(), sessionId })));
  return appendParams({
    sessions,
    expected: sessions.map(() => null),
    epochs: sessions.map(() => null),
    shards: sessions.map(shardOf),
    counts: sessions.map(() => events),
    ids: all.map((e) => e.id),
    types: all.map((e) => e.type),
    statuses: all.map(() => null),
    awaiting: all.map(() => null),
    bodies: all.map((e) => Event.encode({ ...e, createdAt, seq: 0 }).finish()),
    createdAt,
    announce: { channel: EVENTS_CHANNEL, prefix: "bench" },
  });
}

async function timedBatch(pool: pg.Pool, sql: string, params: unknown[], expected: number): Promise<number> {
  const t0 = nowMs();
  const { rows } = await pool.query<{ outcome: number }>(sql, params);
  const elapsed = nowMs() - t0;
  if (rows.length !== expected || rows.some((r) => r.outcome !== 0)) throw new Error(`a batch of ${expected} events returned ${rows.length} rows`);
  return elapsed;
}

const TITLE = "one append batch in Postgres, per-batch function vs per-request function";

export const appendBatchBench: Bench = {
  name: "append-batch",
  title: TITLE,
  async run() {
    // Only its database is used: migrated by the service, no relay draining the outbox meanwhile.
    const bench = await startBenchLog({ env: { MH_RELAY_ENABLED: "false" }, inProcess: true });
    const pool = new pg.Pool({ connectionString: bench.dbUrl, max: 1 });
    try {
      const sessions = await bench.newSessions(Math.max(...SHAPES.map(([r]) => r)));
      const samples = SHAPES.map(() => FUNCTIONS.map((): number[] => []));
      for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
        for (const [s, [requests, events]] of SHAPES.entries()) {
          // Alternate which function goes first, so neither always follows the other's commit.
          for (let i = 0; i < FUNCTIONS.length; i++) {
            const f = (round + i) % FUNCTIONS.length;
            const params = batchParams(sessions.slice(0, requests), events);
            const elapsed = await timedBatch(pool, FUNCTIONS[f]?.sql ?? "", params, requests * events);
            if (round >= WARMUP_ROUNDS) samples[s]?.[f]?.push(elapsed);
          }
        }
      }
      const shapeName = ([requests, events]: readonly [number, number]): string =>
        `${requests} request${requests > 1 ? "s" : ""} x ${events} event${events > 1 ? "s" : ""}`;
      const rows: Cell[][] = [];
      const ratios: Cell[][] = [];
      const data: Record<string, unknown> = {};
      for (const [s, shape] of SHAPES.entries()) {
        const [perBatch, perRequest] = FUNCTIONS.map((_, f) => summarize(samples[s]?.[f] ?? []));
        if (perBatch === undefined || perRequest === undefined) continue;
        data[shapeName(shape)] = { perBatch, perRequest };
        for (const [f, summary] of [perBatch, perRequest].entries()) {
          rows.push([shapeName(shape), FUNCTIONS[f]?.name ?? "", ...latencyCells(summary), rate((shape[0] * shape[1] * 1000) / summary.mean)]);
        }
        ratios.push([shapeName(shape), (perBatch.p50 / perRequest.p50).toFixed(2), (perBatch.mean / perRequest.mean).toFixed(2)]);
      }
      return {
        name: "append-batch",
        title: TITLE,
        tables: [
          { title: "latency of one batch (its statement, transaction and commit)", columns: ["batch", "function", ...LATENCY_COLUMNS, "events/s"], rows },
          { title: "per batch / per request (below 1: the per-batch function is faster)", columns: ["batch", "p50 ratio", "mean ratio"], rows: ratios },
        ],
        checks: [],
        data,
        notes: [
          `${ROUNDS} rounds after ${WARMUP_ROUNDS} warm-up; each round sends every shape through both functions, in alternating order`,
          "events/s = events per batch / mean batch latency, from one connection; every batch appends new events (no retries)",
          "store/append.ts sends a batch of one request to mh_append_serial directly; the 1 x 1 row of mh_append shows what handing it over costs",
        ],
      };
    } finally {
      await pool.end();
      await bench.stop();
    }
  },
};

runIfMain(appendBatchBench, import.meta.url);
