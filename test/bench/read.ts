/**
 * Read: end-to-end gRPC latency of GetEvents for a 100-event slice (after_seq) from the middle of
 * a 1,000,000-event session and from a 100-event session, side by side with the naive store (the
 * whole session read in order, sliced in memory) on the same two sessions. Why: harnesses rebuild
 * their context from slices of very long logs; the design claims a slice costs the slice, not the
 * log. Target: GetEvents p99 < 5 ms on the 1M session. The service runs as its own process; the
 * SQL-only rows split gRPC from database time, and a health Check on the same server, timed in
 * every round, is the floor any call pays on this machine. The fast variants are interleaved round by round so drift and noise hit them alike; the
 * naive read of the 1M session (seconds each) runs afterwards, so its heap churn does not land in
 * the other samples. The garbage-collection pauses of both processes during the interleaved rounds
 * are printed too (lib/gc-pauses.ts): here they make much of the tail.
 */
import pg from "pg";
import type { Db } from "@metaharness/db";
import { GetEventsRequest, GetEventsResponse, SessionLogService, type Event } from "@metaharness/proto";
import { cpuMeter, type CpuUse } from "./lib/cpu.js";
import { explain, type PlanSummary } from "./lib/explain.js";
import {
  overlapsPause,
  recordOwnPauses,
  summarizePauses,
  tracedPauses,
  TRACE_GC,
  type Pause,
  type PauseSummary,
} from "./lib/gc-pauses.js";
import { naiveSlice } from "./lib/naive.js";
import { bulkEventId, populateSession, type PopulateTimings } from "./lib/populate.js";
import {
  atMost,
  cpuTable,
  LATENCY_COLUMNS,
  latencyCells,
  ms,
  type Bench,
  type BenchReport,
  type Cell,
} from "./lib/report.js";
import { HEALTH_CHECK } from "./lib/health-method.js";
import { startRawCall, type RawCall } from "./lib/rawcall.js";
import { benchEvent, startBenchLog, type BenchLog } from "./lib/service.js";
import { serviceDb, SLICE_SQL, sliceParams, sqlSlice } from "./lib/slice-sql.js";
import { nowMs, summarize, type Summary } from "./lib/stats.js";

const BIG = 1_000_000;
const SMALL = 100;
const SLICE = 100;
/** The 1M session's slices start at a random after_seq in [MIDDLE_FROM, MIDDLE_FROM + MIDDLE_SPAN). */
const MIDDLE_FROM = 450_000;
const MIDDLE_SPAN = 100_000;
const WARMUP_ROUNDS = 200;
const ROUNDS = 2_000;
const NAIVE_BIG_WARMUP = 1;
const NAIVE_BIG_SAMPLES = 5;

/** A slice read; `elapsedMs` when the reader times the call itself (another process's clock). */
type Reader = (sessionId: string, afterSeq: number) => Promise<{ events: Event[]; elapsedMs?: number }>;

const GO_GETEVENTS = "ours (gRPC GetEvents, Go client)";
const GET_EVENTS = SessionLogService.getEvents.path;

interface Variant {
  readonly store: "ours (gRPC GetEvents)" | typeof GO_GETEVENTS | "ours (SQL only)" | "naive (whole session)";
  readonly size: number;
  readonly read: Reader;
  readonly samples: number[];
  /** When each sample began (performance.now()), to match samples with the client's GC pauses. */
  readonly starts: number[];
}

function position(size: number): number {
  return size === BIG ? MIDDLE_FROM + Math.floor(Math.random() * MIDDLE_SPAN) : 0;
}

/** One timed read, checked (outside the timing) to be the slice asked for. */
async function sample(v: Variant, sessionId: string): Promise<{ start: number; elapsed: number }> {
  const after = position(v.size);
  const t0 = nowMs();
  const { events, elapsedMs } = await v.read(sessionId, after);
  const elapsed = elapsedMs ?? nowMs() - t0;
  const first = events[0];
  if (events.length !== SLICE || first?.seq !== after + 1 || (v.size === BIG && first.id !== bulkEventId(after + 1))) {
    throw new Error(`${v.store} on ${v.size} events read ${events.length} events from seq ${first?.seq}`);
  }
  return { start: t0, elapsed };
}

async function setUp(bench: BenchLog): Promise<{ big: string; small: string; populate: PopulateTimings }> {
  const [big, small] = await bench.newSessions(2);
  if (big === undefined || small === undefined) throw new Error("no sessions");
  await bench.client.emitEvents({ sessionId: small, events: Array.from({ length: SMALL }, benchEvent) });
  const populate = await populateSession(bench.dbUrl, big, BIG, benchEvent());
  return { big, small, populate };
}

function variants(bench: BenchLog, pool: pg.Pool, db: Db, rawCall: RawCall): Variant[] {
  const request = (sessionId: string, after: number): GetEventsRequest =>
    GetEventsRequest.fromPartial({ sessionId, position: { $case: "afterSeq", value: after }, limit: SLICE });
  const grpc: Reader = async (sessionId, after) => ({ events: (await bench.client.getEvents(request(sessionId, after))).events });
  // Timed by rawcall from send to the response's last byte; decoded here afterwards, for the check.
  const go: Reader = async (sessionId, after) => {
    const { elapsedMs, response } = await rawCall.call(GET_EVENTS, GetEventsRequest.encode(request(sessionId, after)).finish());
    return { events: GetEventsResponse.decode(response).events, elapsedMs };
  };
  const sql: Reader = async (sessionId, after) => ({ events: await sqlSlice(db, sessionId, after, SLICE) });
  const naive: Reader = async (sessionId, after) => ({ events: await naiveSlice(pool, sessionId, after, SLICE) });
  return [BIG, SMALL].flatMap((size) => [
    { store: "ours (gRPC GetEvents)" as const, size, read: grpc, samples: [], starts: [] },
    { store: GO_GETEVENTS, size, read: go, samples: [], starts: [] },
    { store: "ours (SQL only)" as const, size, read: sql, samples: [], starts: [] },
    { store: "naive (whole session)" as const, size, read: naive, samples: [], starts: [] },
  ]);
}

interface Windows {
  readonly fast: CpuUse;
  readonly naiveBig: CpuUse;
  /** GC pauses of the bench process and of the service during the interleaved fast reads. */
  readonly pauses: { readonly client: Pause[]; readonly service: Pause[]; readonly ms: number };
}

/** The transport's floor: a health Check on the same server, timed in the same rounds as the reads. */
interface Floor {
  readonly label: string;
  /** Resolves with the call's time when the caller timed it in another process. */
  readonly call: () => Promise<number | undefined>;
  readonly samples: number[];
}

function floors(bench: BenchLog, rawCall: RawCall): Floor[] {
  return [
    { label: "floor: health Check, same server", call: async () => void (await bench.healthCheck()), samples: [] },
    {
      label: "floor: health Check, same server, Go client",
      call: async () => (await rawCall.call(HEALTH_CHECK.check.path, new Uint8Array())).elapsedMs,
      samples: [],
    },
  ];
}

async function measure(all: Variant[], ids: { big: string; small: string }, floors: Floor[], bench: BenchLog): Promise<Windows> {
  const idOf = (v: Variant): string => (v.size === BIG ? ids.big : ids.small);
  const fast = all.filter((v) => !(v.store === "naive (whole session)" && v.size === BIG));
  let meter = cpuMeter(bench.pid);
  let clientPauses: { stop(): Pause[] } | undefined;
  let serviceFrom = 0;
  let measuredFrom = 0;
  for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
    if (round === WARMUP_ROUNDS) {
      meter = cpuMeter(bench.pid);
      clientPauses = recordOwnPauses();
      serviceFrom = bench.output().length;
      measuredFrom = nowMs();
    }
    // Rotate the order each round so no variant always runs right after a given other one.
    for (let i = 0; i < fast.length; i++) {
      const v = fast[(round + i) % fast.length];
      if (v === undefined) continue;
      const { start, elapsed } = await sample(v, idOf(v));
      if (round >= WARMUP_ROUNDS) {
        v.samples.push(elapsed);
        v.starts.push(start);
      }
    }
    for (const floor of floors) {
      const t0 = nowMs();
      const elapsed = (await floor.call()) ?? nowMs() - t0;
      if (round >= WARMUP_ROUNDS) floor.samples.push(elapsed);
    }
  }
  const fastCpu = meter.stop();
  const pauses = { client: clientPauses?.stop() ?? [], service: tracedPauses(bench.output().slice(serviceFrom)), ms: nowMs() - measuredFrom };
  // Thousands of calls allocate far more than one young generation: no line means the format changed, not no pause.
  if (pauses.service.length === 0) throw new Error(`no --trace-gc line of the service parsed in ${ROUNDS} rounds (lib/gc-pauses.ts TRACE_LINE)`);
  const naiveBig = all.find((v) => v.store === "naive (whole session)" && v.size === BIG);
  if (naiveBig === undefined) throw new Error("no naive variant");
  for (let i = 0; i < NAIVE_BIG_WARMUP + NAIVE_BIG_SAMPLES; i++) {
    if (i === NAIVE_BIG_WARMUP) meter = cpuMeter(bench.pid);
    const { elapsed } = await sample(naiveBig, ids.big);
    if (i >= NAIVE_BIG_WARMUP) naiveBig.samples.push(elapsed);
  }
  return { fast: fastCpu, naiveBig: meter.stop(), pauses };
}

/** The target for GetEvents p99; calls slower than it are counted, with how many of them overlapped a pause of the client. */
const SLOW_MS = 5;

function pauseTables(all: Variant[], pauses: Windows["pauses"]): BenchReport["tables"] {
  const row = (who: string, s: PauseSummary): Cell[] => [
    who,
    s.count,
    s.scavenges,
    ms(s.p50),
    ms(s.p90),
    ms(s.max),
    s.stepsMs.toFixed(0),
    `${s.pausedPercent.toFixed(1)}%`,
  ];
  const slow = all
    .filter((v) => v.store !== "naive (whole session)")
    .map((v): Cell[] => {
      const over = v.samples.flatMap((elapsed, i) => (elapsed > SLOW_MS ? [{ start: v.starts[i] ?? 0, elapsed }] : []));
      const during = over.filter((c) => overlapsPause(c.start, c.elapsed, pauses.client)).length;
      return [v.store, v.size.toLocaleString("en-US"), v.samples.length, over.length, during];
    });
  return [
    {
      title: `GC pauses during the interleaved fast reads (${(pauses.ms / 1000).toFixed(1)} s)`,
      columns: ["process", "pauses", "scavenges", "p50 ms", "p90 ms", "max ms", "marking steps ms", "time paused"],
      rows: [
        row("bench process (client)", summarizePauses(pauses.client, pauses.ms)),
        row("service (--trace-gc)", summarizePauses(pauses.service, pauses.ms)),
      ],
    },
    {
      title: `calls over ${SLOW_MS} ms, and how many of them overlapped a GC pause of the client`,
      columns: ["store", "session events", "n", `over ${SLOW_MS} ms`, "during a client pause"],
      rows: slow,
    },
  ];
}

function planTable(plan: PlanSummary): BenchReport["tables"][number] {
  return {
    title: `EXPLAIN (ANALYZE, BUFFERS) of the slice statement on the 1M session: ${plan.shape}`,
    columns: ["sequential scans", "buffers", "planning ms", "execution ms"],
    rows: [[plan.seqScans.join(", ") || "none", plan.buffers, ms(plan.planningMs), ms(plan.executionMs)]],
  };
}

function report(all: Variant[], floors: Floor[], populate: PopulateTimings, windows: Windows, plan: PlanSummary): BenchReport {
  const summaries = all.map((v) => ({ store: v.store, size: v.size, latency: summarize(v.samples) }));
  const find = (store: Variant["store"], size: number): Summary =>
    summaries.find((s) => s.store === store && s.size === size)?.latency ?? summarize([]);
  const ratio = (a: number, b: number): string => `${(a / b).toFixed(a / b >= 100 ? 0 : 1)}x`;
  const compare = (size: number): Cell[] => {
    const ours = find("ours (gRPC GetEvents)", size);
    const naive = find("naive (whole session)", size);
    return [
      size.toLocaleString("en-US"),
      ms(ours.p50),
      ms(naive.p50),
      ratio(naive.p50, ours.p50),
      ms(ours.p99),
      ms(naive.p99),
      ratio(naive.p99, ours.p99),
    ];
  };
  const oursBig = find("ours (gRPC GetEvents)", BIG);
  const oursSmall = find("ours (gRPC GetEvents)", SMALL);
  return {
    name: "read",
    title: `a ${SLICE}-event slice (after_seq), ours vs the naive store`,
    tables: [
      {
        title: "population of the 1M-event session (SQL bulk load)",
        columns: ["step", "seconds"],
        rows: [
          ["INSERT ... SELECT generate_series, then last_seq", (populate.insertMs / 1000).toFixed(1)],
          ["VACUUM ANALYZE events", (populate.vacuumAnalyzeMs / 1000).toFixed(1)],
          [`(events table and indexes: ${Math.round(populate.tableBytes / 2 ** 20)} MiB)`, ""],
        ],
      },
      {
        title: `latency of one ${SLICE}-event slice`,
        columns: ["store", "session events", ...LATENCY_COLUMNS],
        rows: [
          ...summaries.map((s) => [s.store, s.size.toLocaleString("en-US"), ...latencyCells(s.latency)]),
          ...floors.map((f) => [f.label, "-", ...latencyCells(summarize(f.samples))]),
        ],
      },
      {
        title: "ours (gRPC) vs naive, side by side",
        columns: ["session events", "ours p50", "naive p50", "ratio", "ours p99", "naive p99", "ratio"],
        rows: [compare(BIG), compare(SMALL)],
      },
      ...pauseTables(all, windows.pauses),
      planTable(plan),
      cpuTable("CPU while measuring", [
        ["interleaved fast reads", windows.fast],
        ["naive reads of the 1M session", windows.naiveBig],
      ]),
    ],
    checks: [
      atMost("GetEvents p99, 1M-event session", oursBig.p99, SLOW_MS, "ms"),
      atMost("GetEvents p99, 1M-event session, from a Go client", find(GO_GETEVENTS, BIG).p99, SLOW_MS, "ms"),
    ],
    notes: [
      `1M session: after_seq uniform in ${MIDDLE_FROM}..${MIDDLE_FROM + MIDDLE_SPAN}; 100-event session: after_seq 0`,
      `${ROUNDS} interleaved rounds after ${WARMUP_ROUNDS} warm-up; naive on 1M: ${NAIVE_BIG_SAMPLES} samples after ${NAIVE_BIG_WARMUP} warm-up (its p99 is its max)`,
      `cost of the log, ours: p50 on 1M / p50 on 100 events = ${ratio(oursBig.p50, oursSmall.p50)}`,
      "naive and SQL-only run in the bench process, without gRPC (that favours the naive store); SQL-only is the service's own read on its kind of pool (prepared statements), the naive read a plain pg query",
      "the service runs as its own process (dist/main.js); the floor row is a grpc.health.v1 Check on its server, one per round: what any unary call pays here",
      "GC pauses: the client's from perf_hooks (with their times, so a slow call can be matched to one), the service's from its --trace-gc lines (durations only: its clock is not ours, so its share of the slow calls is not counted)",
    ],
    data: {
      summaries,
      floors: floors.map((f) => ({ label: f.label, latency: summarize(f.samples) })),
      populate,
      plan,
      windows: { fast: windows.fast, naiveBig: windows.naiveBig },
      pauses: { client: summarizePauses(windows.pauses.client, windows.pauses.ms), service: summarizePauses(windows.pauses.service, windows.pauses.ms) },
      rounds: ROUNDS,
      naiveBigSamples: NAIVE_BIG_SAMPLES,
    },
  };
}

export const readBench: Bench = {
  name: "read",
  title: "GetEvents slice vs naive full read",
  async run() {
    const bench = await startBenchLog({ env: { MH_RELAY_ENABLED: "false" }, nodeArgs: [TRACE_GC] });
    const pool = new pg.Pool({ connectionString: bench.dbUrl, max: 2 });
    const db = serviceDb(bench.dbUrl, 1);
    let rawCall: RawCall | undefined;
    try {
      rawCall = await startRawCall(bench.address, bench.bearerToken);
      const { big, small, populate } = await setUp(bench);
      const all = variants(bench, pool, db, rawCall);
      const floorCalls = floors(bench, rawCall);
      const windows = await measure(all, { big, small }, floorCalls, bench);
      const plan = await explain(pool, SLICE_SQL, sliceParams(big, MIDDLE_FROM + MIDDLE_SPAN / 2, SLICE));
      return report(all, floorCalls, populate, windows, plan);
    } finally {
      await rawCall?.stop();
      await pool.end();
      await db.end();
      await bench.stop();
    }
  },
};
