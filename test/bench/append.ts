/**
 * Append: end-to-end gRPC latency and throughput of EmitEvent (one event per call) with 1, 16 and
 * 64 concurrent sessions, each a closed-loop writer awaiting its previous append, and of
 * EmitEvents (batches) across 16 sessions. Why: every event a harness produces goes through this
 * path, and it holds a row lock per session plus a transaction per call, so its latency under
 * concurrency bounds how fast a brain can act and how many sessions one instance carries.
 * Targets: EmitEvent p99 < 10 ms at 16 sessions; batched appends >= 5,000 events/s in total.
 */
import { atLeast, atMost, LATENCY_COLUMNS, latencyCells, rate, type Bench, type Cell } from "./lib/report.js";
import { closedLoop } from "./lib/load.js";
import { benchEvent, startBenchLog, type BenchLog } from "./lib/service.js";
import { summarize, type Summary } from "./lib/stats.js";

const WARMUP_MS = 2_000;
const MEASURE_MS = 6_000;
const CONCURRENCY = [1, 16, 64] as const;
const BATCH_SESSIONS = 16;
const BATCH_SIZE = 100;

interface LevelFigures {
  readonly sessions: number;
  readonly latency: Summary;
  readonly eventsPerSecond: number;
}

async function singleEvents(bench: BenchLog, sessions: number): Promise<LevelFigures> {
  const ids = await bench.newSessions(sessions);
  const result = await closedLoop({
    workers: sessions,
    warmupMs: WARMUP_MS,
    measureMs: MEASURE_MS,
    prepare: (w) => ({ sessionId: ids[w] ?? "", event: benchEvent() }),
    op: async (_w, request) => {
      await bench.client.emitEvent(request);
    },
  });
  return { sessions, latency: summarize(result.latencies), eventsPerSecond: result.opsPerSecond };
}

async function batches(bench: BenchLog): Promise<LevelFigures> {
  const ids = await bench.newSessions(BATCH_SESSIONS);
  const result = await closedLoop({
    workers: BATCH_SESSIONS,
    warmupMs: WARMUP_MS,
    measureMs: MEASURE_MS,
    prepare: (w) => ({ sessionId: ids[w] ?? "", events: Array.from({ length: BATCH_SIZE }, benchEvent) }),
    op: async (_w, request) => {
      await bench.client.emitEvents(request);
    },
  });
  return {
    sessions: BATCH_SESSIONS,
    latency: summarize(result.latencies),
    eventsPerSecond: result.opsPerSecond * BATCH_SIZE,
  };
}

function row(label: string, f: LevelFigures): Cell[] {
  return [label, ...latencyCells(f.latency), rate(f.eventsPerSecond)];
}

export const appendBench: Bench = {
  name: "append",
  title: "EmitEvent / EmitEvents latency and throughput over gRPC",
  async run() {
    const bench = await startBenchLog();
    try {
      const levels: LevelFigures[] = [];
      for (const sessions of CONCURRENCY) levels.push(await singleEvents(bench, sessions));
      const batched = await batches(bench);
      const at16 = levels.find((l) => l.sessions === 16);
      const poolSize = bench.log.config.poolSize;
      return {
        name: "append",
        title: this.title,
        tables: [
          {
            title: "EmitEvent, 1 event per call, one closed-loop writer per session",
            columns: ["sessions", ...LATENCY_COLUMNS, "events/s"],
            rows: levels.map((l) => row(String(l.sessions), l)),
          },
          {
            title: `EmitEvents, ${BATCH_SIZE} events per call (latency per call)`,
            columns: ["sessions", ...LATENCY_COLUMNS, "events/s"],
            rows: [row(String(batched.sessions), batched)],
          },
        ],
        checks: [
          atMost("EmitEvent p99 @16 sessions", at16?.latency.p99 ?? Number.NaN, 10, "ms"),
          atLeast(`EmitEvents x${BATCH_SIZE} @${BATCH_SESSIONS} sessions`, batched.eventsPerSecond, 5_000, "events/s"),
        ],
        notes: [
          `${WARMUP_MS / 1000} s warm-up then ${MEASURE_MS / 1000} s measured per row; gRPC client and service share one Node process`,
          `service defaults: Postgres pool ${poolSize} connections, outbox relay on (publishing to Kafka meanwhile)`,
          `event: agent.message with ~200 characters of text`,
        ],
        data: { levels, batched, batchSize: BATCH_SIZE, warmupMs: WARMUP_MS, measureMs: MEASURE_MS, poolSize },
      };
    } finally {
      await bench.stop();
    }
  },
};
