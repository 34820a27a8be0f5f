/**
 * Append: end-to-end gRPC latency and throughput of EmitEvent (one event per call) and of
 * EmitEvents (batches), against the session-log service running as its own process (the bench
 * process is the client, as a harness would be). Why: every event a harness produces goes through
 * this path, and it takes a row lock per session and a commit (group-committed: one per batch of
 * concurrent calls), so its latency bounds how fast a brain can act and how many sessions one
 * instance carries.
 *
 * Two kinds of load, because they answer different questions:
 * - closed loop (1, 16, 64 sessions, each appending again as soon as its previous append
 *   returns): the throughput ceiling. At saturation mean latency = sessions / throughput
 *   (Little's law), so its latency says how fast the whole machine goes, not how long one append
 *   waits at a given load. At 16 sessions also from ghz (a Go client), and against an instance
 *   without the outbox relay, to split the ceiling into the client's, Kafka's and the rest;
 * - open loop (16 sessions on a fixed schedule at a stated total rate, latency counted from when
 *   each append was due): how long an append takes when sessions append at that pace.
 * A grpc.health.v1 Check on the same server, under the same loads, is the floor any unary call
 * pays on this machine (transport, HTTP/2, event loops), measured side by side; the same Check on
 * a process with nothing but grpc-js is the floor of the stack itself, without any of our code;
 * during each open-loop window the disk under Postgres is sampled too (lib/fsync-floor.ts): an
 * append is answered after its commit's flush, so that is the floor of its latency on that disk.
 * Targets: EmitEvent p99 < 10 ms at 16 sessions (checked under both loads); batched appends
 * >= 5,000 events/s in total. A separate run at 16 sessions samples what Postgres backends wait
 * on (kept out of the measured rows, since sampling costs a little CPU).
 */
import { closedLoop, openLoop, type ClosedLoopOptions } from "./lib/load.js";
import { observe, type Observation } from "./lib/observe.js";
import type { WaitProfile } from "./lib/pgwaits.js";
import {
  atLeast,
  atMost,
  cpuTable,
  LATENCY_COLUMNS,
  latencyCells,
  rate,
  type Bench,
  type Cell,
  type Table,
} from "./lib/report.js";
import pg from "pg";
import { Event } from "@metaharness/proto";
import { sqlAppend } from "./lib/append-sql.js";
import { fsyncProbeDir } from "./lib/fsync-floor.js";
import { ghzBinary, ghzLoad, type GhzLoad } from "./lib/ghz.js";
import { startGrpcAlone } from "./lib/grpc-alone.js";
import { benchEvent, startBenchLog, type BenchLog } from "./lib/service.js";
import { summarize, type Summary } from "./lib/stats.js";

const WARMUP_MS = 2_000;
const MEASURE_MS = 6_000;
const CONCURRENCY = [1, 16, 64] as const;
const OPEN_SESSIONS = 16;
/**
 * Total events/s of the open-loop rows: 10 events/s per session (a busy harness: a turn appends a
 * handful of events a second, its streamed text goes out as deltas, not appends), half the outbox
 * target's rate, and that rate (the one the target is checked at). Twice it saturated even the
 * health-Check floor here (the client alone).
 */
const OPEN_RATES = [160, 500, 1_000] as const;
const CHECKED_RATE = 1_000;
const BATCH_SESSIONS = 16;
const BATCH_SIZE = 100;
const DIAGNOSIS_SESSIONS = 16;
const DIAGNOSIS_MS = 3_000;

interface Level {
  readonly label: string;
  readonly latency: Summary;
  readonly eventsPerSecond: number;
  readonly observed: Observation;
}

async function measured<T>(
  pid: number | undefined,
  label: string,
  eventsPerCall: number,
  opts: Omit<ClosedLoopOptions<T>, "warmupMs" | "measureMs">,
  waitsOf?: string,
  measureMs = MEASURE_MS,
): Promise<Level> {
  const window = { warmupMs: WARMUP_MS, measureMs };
  const [result, observed] = await Promise.all([
    closedLoop({ ...opts, ...window }),
    observe(window.warmupMs, window.measureMs, { servicePid: pid, waitsOf }),
  ]);
  return {
    label,
    latency: summarize(result.latencies),
    eventsPerSecond: result.opsPerSecond * eventsPerCall,
    observed,
  };
}

async function singleEvents(bench: BenchLog, sessions: number, waitsOf?: string, measureMs?: number): Promise<Level> {
  const ids = await bench.newSessions(sessions);
  return measured(
    bench.pid,
    `${sessions} sessions`,
    1,
    {
      workers: sessions,
      prepare: (w) => ({ sessionId: ids[w] ?? "", event: benchEvent() }),
      op: async (_w, request) => {
        await bench.client.emitEvent(request);
      },
    },
    waitsOf,
    measureMs,
  );
}

async function batches(bench: BenchLog): Promise<Level> {
  const ids = await bench.newSessions(BATCH_SESSIONS);
  return measured(bench.pid, `${BATCH_SESSIONS} sessions x${BATCH_SIZE}`, BATCH_SIZE, {
    workers: BATCH_SESSIONS,
    prepare: (w) => ({ sessionId: ids[w] ?? "", events: Array.from({ length: BATCH_SIZE }, benchEvent) }),
    op: async (_w, request) => {
      await bench.client.emitEvents(request);
    },
  });
}

/** A server's health Check, and the process that answers it. */
interface Floor {
  readonly name: string;
  readonly pid: number | undefined;
  check(): Promise<void>;
}

/** The floor: health checks in a closed loop of `callers`. */
async function floorClosed(floor: Floor, callers: number): Promise<Level> {
  return measured(floor.pid, `${callers} callers${floor.name}`, 1, {
    workers: callers,
    prepare: () => undefined,
    op: () => floor.check(),
  });
}

async function open(label: string, pid: number | undefined, rate: number, op: (w: number) => Promise<void>): Promise<Level> {
  return measuredWindow(label, pid, true, async (window) => {
    const result = await openLoop({ workers: OPEN_SESSIONS, rate, ...window, prepare: () => undefined, op: (w) => op(w) });
    return { latencies: result.latencies, perSecond: result.opsPerSecond };
  });
}

/**
 * One measured window of a load that runs for it (open loop, or ghz's either loop), with the
 * machine observed meanwhile and, with `fsync`, the disk under Postgres sampled.
 */
async function measuredWindow(
  label: string,
  pid: number | undefined,
  fsync: boolean,
  drive: (window: { warmupMs: number; measureMs: number }) => Promise<{ latencies: number[]; perSecond: number }>,
): Promise<Level> {
  const window = { warmupMs: WARMUP_MS, measureMs: MEASURE_MS };
  const [result, observed] = await Promise.all([drive(window), observe(window.warmupMs + 50, window.measureMs, { servicePid: pid, fsync })]);
  return { label, latency: summarize(result.latencies), eventsPerSecond: result.perSecond, observed };
}

async function openAppends(bench: BenchLog, rate: number): Promise<Level> {
  const ids = await bench.newSessions(OPEN_SESSIONS);
  return open(`EmitEvent @${rate.toLocaleString("en-US")}/s`, bench.pid, rate, async (w) => {
    await bench.client.emitEvent({ sessionId: ids[w] ?? "", event: benchEvent() });
  });
}

/** The same appends as openAppends, as the service's one statement, sent from here: the database's share. */
async function openSqlAppends(bench: BenchLog, pool: pg.Pool, rate: number): Promise<Level> {
  const ids = await bench.newSessions(OPEN_SESSIONS);
  return open(`its SQL alone @${rate.toLocaleString("en-US")}/s`, bench.pid, rate, async (w) => {
    await sqlAppend(pool, ids[w] ?? "", benchEvent());
  });
}

/**
 * A row from ghz (a Go client, lib/ghz.ts) with 16 workers, at `rate` or (undefined) in a closed
 * loop: the client's own pauses mostly out of the figure.
 */
function ghzRow(label: string, bench: BenchLog, bin: string, rate: number | undefined, load: Pick<GhzLoad, "call" | "data">): Promise<Level> {
  // The disk is sampled in the open loops only: they are the rows whose tails it explains.
  return measuredWindow(label, bench.pid, rate !== undefined, async (window) => {
    const metadata = { authorization: `Bearer ${bench.bearerToken}` };
    const result = await ghzLoad(bin, { ...load, address: bench.address, metadata, rate, workers: OPEN_SESSIONS, ...window });
    return { latencies: result.latencies, perSecond: result.callsPerSecond };
  });
}

/** EmitEvent from ghz at `rate` (undefined: closed loop); sessions named after ghz's worker ids, one each. */
async function ghzAppends(bench: BenchLog, bin: string, rate: number | undefined, label: string): Promise<Level> {
  const prefix = `sesn_ghz${Date.now().toString(36)}_`;
  for (let w = 0; w < OPEN_SESSIONS; w++) await bench.client.createSession({ sessionId: `${prefix}g${w}c0`, metadata: undefined });
  return ghzRow(label, bench, bin, rate, {
    call: "metaharness.v1.SessionLog/EmitEvent",
    // Ids that grow with time, as the Node client's (ULIDs): the unique index takes them in order.
    data: { session_id: `${prefix}{{.WorkerID}}`, event: { ...(Event.toJSON(benchEvent()) as object), id: "sevt_{{.TimestampUnixNano}}_{{.RequestNumber}}" } },
  });
}

/**
 * The closed loop at 16 sessions on a second instance of the service without its outbox relay:
 * what publishing every event to Kafka (the relay's work and the broker's) takes of the ceiling.
 * The instance is left idle and stopped by the caller at the very end: stopping it drops its
 * database, and the disk's flushes stall for 100 ms and more a few seconds later
 * (lib/fsync-floor.ts), which would land in whatever row ran then.
 */
async function withoutRelay(): Promise<{ readonly level: Level; stop(): Promise<void> }> {
  const bench = await startBenchLog({ env: { MH_RELAY_ENABLED: "false" } });
  try {
    const level = await singleEvents(bench, OPEN_SESSIONS);
    return { level: { ...level, label: `${level.label}, outbox relay off` }, stop: () => bench.stop() };
  } catch (err) {
    await bench.stop();
    throw err;
  }
}

/** What the disk under Postgres took to flush during each open-loop window: the least a durable commit waits. */
function fsyncTable(levels: readonly Level[]): Table {
  const sampled = levels.filter((l) => l.observed.fsync !== undefined);
  return {
    title:
      sampled.length === 0
        ? "durable-write floor: not sampled (no data folder recorded by infra/postgres, so the disk is unknown here)"
        : `durable-write floor during each open-loop window: 8 KiB write + fdatasync in ${fsyncProbeDir() ?? "?"} (beside the data folder infra/postgres recorded), 10 ms apart (lib/fsync-floor.ts)`,
    columns: ["window", ...LATENCY_COLUMNS],
    rows: sampled.map((l) => [l.label, ...latencyCells(l.observed.fsync ?? summarize([]))]),
  };
}

function row(l: Level): Cell[] {
  return [l.label, ...latencyCells(l.latency), rate(l.eventsPerSecond)];
}

function waitTables(w: WaitProfile | undefined): Table[] {
  if (w === undefined) return [];
  const fmt = (x: number): string => x.toFixed(2);
  return [
    {
      title: `where appending backends wait, ${DIAGNOSIS_SESSIONS} sessions, ${w.samples} samples of pg_stat_activity`,
      columns: ["wait event (CPU = running)", "avg backends"],
      rows: w.byWait.slice(0, 6).map((x) => [x.wait, fmt(x.backends)]),
    },
    {
      title: "locks waited for (pg_locks, not granted)",
      columns: ["lock", "avg backends"],
      rows: w.byLock.slice(0, 3).map((x) => [x.lock, fmt(x.backends)]),
    },
  ];
}

export const appendBench: Bench = {
  name: "append",
  title: "EmitEvent / EmitEvents latency and throughput over gRPC",
  async run() {
    // Built first (once, about a minute, needs Go): a failed build costs no measurement.
    const ghz = await ghzBinary();
    const bench = await startBenchLog();
    const alone = await startGrpcAlone().catch(async (err: unknown) => {
      await bench.stop();
      throw err;
    });
    // The bench process's own connections, for the SQL-alone rows (as many as the open loop's sessions).
    const pool = new pg.Pool({ connectionString: bench.dbUrl, max: OPEN_SESSIONS });
    let relayOff: Awaited<ReturnType<typeof withoutRelay>> | undefined;
    try {
      const ours: Floor = { name: "", pid: bench.pid, check: () => bench.healthCheck() };
      const bare: Floor = { name: ", grpc-js alone", pid: alone.pid, check: () => alone.check() };
      const floor: Level[] = [];
      for (const callers of [1, 16]) floor.push(await floorClosed(ours, callers));
      floor.push(await floorClosed(bare, 16));
      floor.push(await ghzRow(`${OPEN_SESSIONS} callers, Go client (ghz)`, bench, ghz, undefined, { call: "grpc.health.v1.Health/Check", data: {} }));
      const levels: Level[] = [];
      for (const sessions of CONCURRENCY) levels.push(await singleEvents(bench, sessions));
      levels.push(await ghzAppends(bench, ghz, undefined, `${OPEN_SESSIONS} sessions, Go client (ghz)`));
      relayOff = await withoutRelay();
      levels.push(relayOff.level);
      const opened: Level[] = [];
      for (const rate of OPEN_RATES) {
        const at = `@${rate.toLocaleString("en-US")}/s`;
        opened.push(await open(`grpc-js alone ${at}`, alone.pid, rate, () => alone.check()));
        opened.push(await open(`health ${at}`, bench.pid, rate, () => bench.healthCheck()));
        opened.push(await openAppends(bench, rate));
        opened.push(await openSqlAppends(bench, pool, rate));
        opened.push(await ghzRow(`health ${at}, Go client (ghz, from send)`, bench, ghz, rate, { call: "grpc.health.v1.Health/Check", data: {} }));
        opened.push(await ghzAppends(bench, ghz, rate, `EmitEvent @${rate.toLocaleString("en-US")}/s, Go client (ghz, from send)`));
      }
      // Before the batches: they leave the relay a backlog whose draining would show in the waits.
      const diagnosis = await singleEvents(bench, DIAGNOSIS_SESSIONS, bench.dbUrl, DIAGNOSIS_MS);
      const batched = await batches(bench);
      const at16 = levels.find((l) => l.label === "16 sessions");
      const checked = opened.find((l) => l.label === `EmitEvent @${CHECKED_RATE.toLocaleString("en-US")}/s`);
      const checkedGo = opened.find((l) => l.label === `EmitEvent @${CHECKED_RATE.toLocaleString("en-US")}/s, Go client (ghz, from send)`);
      const poolSize = bench.config.poolSize;
      return {
        name: "append",
        title: this.title,
        tables: [
          {
            title: "floor: grpc.health.v1 Check on the same server (and on grpc-js alone), closed loop",
            columns: ["concurrency", ...LATENCY_COLUMNS, "calls/s"],
            rows: floor.map(row),
          },
          {
            title: "EmitEvent, 1 event per call, closed loop: one writer per session, appending again at once",
            columns: ["concurrency", ...LATENCY_COLUMNS, "events/s"],
            rows: levels.map(row),
          },
          {
            title: `open loop, ${OPEN_SESSIONS} sessions on a fixed schedule (latency from when each call was due)`,
            columns: ["call @ offered rate", ...LATENCY_COLUMNS, "done/s"],
            rows: opened.map(row),
          },
          fsyncTable(opened),
          {
            title: `EmitEvents, ${BATCH_SIZE} events per call (latency per call)`,
            columns: ["concurrency", ...LATENCY_COLUMNS, "events/s"],
            rows: [row(batched)],
          },
          cpuTable(
            "CPU during each measured window",
            [...floor.map((l) => ({ ...l, label: `health, ${l.label}` })), ...levels, ...opened, batched].map(
              (l) => [l.label, l.observed.cpu] as const,
            ),
          ),
          ...waitTables(diagnosis.observed.waits),
        ],
        checks: [
          atMost(
            `EmitEvent p99 @16 sessions, open loop ${CHECKED_RATE.toLocaleString("en-US")} events/s`,
            checked?.latency.p99 ?? Number.NaN,
            10,
            "ms",
          ),
          atMost(
            `EmitEvent p99 @16 sessions, open loop ${CHECKED_RATE.toLocaleString("en-US")} events/s, Go client (ghz, from send)`,
            checkedGo?.latency.p99 ?? Number.NaN,
            10,
            "ms",
          ),
          atMost("EmitEvent p99 @16 sessions, closed loop (saturated)", at16?.latency.p99 ?? Number.NaN, 10, "ms"),
          atLeast(`EmitEvents x${BATCH_SIZE} @${BATCH_SESSIONS} sessions`, batched.eventsPerSecond, 5_000, "events/s"),
        ],
        notes: [
          `${WARMUP_MS / 1000} s warm-up then ${MEASURE_MS / 1000} s measured per row; the service runs as its own process (dist/main.js), the gRPC client in the bench process`,
          `service defaults: Postgres pool ${poolSize} connections, outbox relay on (publishing to Kafka meanwhile)`,
          "event: agent.message with ~200 characters of text",
          "grpc-js alone: a process with nothing but a grpc-js server answering the health Check (lib/grpc-alone-server.ts), called by the same client: the least a unary call costs on this machine with this stack",
          "closed loop: mean latency = sessions / throughput (Little's law), so latency at 16 and 64 sessions tracks the throughput ceiling",
          "closed loop, Go client (ghz): the same 16 sessions appending back to back from ghz (timed from send, which is exact in a closed loop); outbox relay off: the Node client's 16 sessions on a second instance of the service without its relay, so neither the relay nor the Kafka broker works meanwhile: the share of the ceiling that publishing every event takes",
          "Go client (ghz, from send): the same open loop from ghz (infra/ghz/install.sh, lib/ghz.ts) on one HTTP/2 connection: the Node client's own pauses (its scavenges take 3-10 ms) are not in these rows; ghz times a call from when it sends, so a stall that holds all 16 workers (over 16 calls' spacing: 100 ms at 160/s, 16 ms at 1,000/s) is not counted as waiting, as the Node rows count it; its CPU shows as other load",
          "its SQL alone: the same appends as the service's one statement (mh_append, lib/append-sql.ts), sent by the bench process over its own connections: what the database takes of an EmitEvent",
          "Lock:object on pg_database objid=0 is the lock NOTIFY takes at commit: it serialises the commits (and WAL flushes) of every transaction that notifies",
        ],
        data: {
          floor,
          levels,
          opened,
          batched,
          diagnosis,
          batchSize: BATCH_SIZE,
          warmupMs: WARMUP_MS,
          measureMs: MEASURE_MS,
          poolSize,
        },
      };
    } finally {
      await pool.end();
      await alone.stop();
      await bench.stop();
      await relayOff?.stop();
    }
  },
};
