/**
 * What a text-only turn costs, per service: the session log and the harness each as its own
 * process (their built dist/main.js, as deployed), on the real Postgres and Kafka, the offline
 * model (a stated TTFT) and the driving clients in this process (turn-cpu-stack.ts). Sessions are
 * driven as a gateway and a UI would (turn-cpu-driver.ts): in a closed loop of N sessions of 1 or
 * more turns each, or as turns arriving at random (Poisson) at a stated rate. CPU is read from
 * /proc/<pid>/stat of each process over the measured window; CPU per turn is that over the turns
 * completed, and turns/s the machine's pace at that load. The gateway is not in it (the issue
 * measured 13% of a turn's CPU there).
 *
 * `npm run bench -- turn-cpu` runs 1 and 16 sessions of 1 and of 5 turns each, then the open loop
 * at the rate the 16-session loop of single turns reached and at half of it. Flags (`=` before a
 * value, run.ts reads bare words as benchmark names): `--sessions=1,16`, `--turns-per-session=1,5`,
 * `--open-rates=12,24` (turns/s; `--open-rates=` alone: no open loop), `--seconds=30`,
 * `--warmup=10`, `--quick` (3 s warm-up, 10 s measured), `--cpu-prof` (each service process's CPU
 * profile into bench/results/cpu-prof/). The TTFT sweep (ttft-sweep.ts) runs it as its last phase.
 */
import { mkdirSync } from "node:fs";
import os from "node:os";
import { busyTicks, postgresAndKafkaTicks, postgresTicksOf, processTicks, ticksSince, TICKS_PER_SECOND } from "./lib/cpu.js";
import { hasFlag, numbersFlag } from "./lib/flags.js";
import { atMost, ms, runIfMain, type Bench, type Check, type Table } from "./lib/report.js";
import { summarize, type Summary } from "./lib/stats.js";
import { drive, loopLabel, SEGMENT_KEYS, type Segments, type Turn, type TurnLoop } from "./turn-cpu-driver.js";
import { startTurnStack } from "./turn-cpu-stack.js";

export { loopLabel, type TurnLoop } from "./turn-cpu-driver.js";

/** Latency figures of a set of turns. */
export interface TurnSummaries {
  /** user.message sent -> status_idle seen by the waiting client, ms. */
  readonly turnMs: Summary;
  /** user.message sent -> first token delta at the watcher, ms. */
  readonly ttftMs: Summary;
  /** The platform's share: TTFT less the model's own (its receipt of the request to its first delta written), per turn, ms. */
  readonly overheadMs: Summary;
  /** Where the platform's share went, ms per turn (wall clock, 1 ms resolution). */
  readonly segments: Readonly<Record<keyof Segments, Summary>>;
}

export interface TurnCpuFigures extends TurnSummaries {
  readonly loop: TurnLoop;
  readonly modelTtftMs: number;
  readonly seconds: number;
  readonly turns: number;
  readonly turnsPerSecond: number;
  /** ms of CPU per turn, by process. */
  readonly cpuMsPerTurn: Readonly<Record<"sessionLog" | "harness" | "postgres" | "kafka" | "benchProcess" | "machine", number>>;
  readonly load: readonly [number, number];
  /** Sessions of more than one turn: the first turns and the later ones (2..n) apart. */
  readonly byTurn: { readonly first: TurnSummaries; readonly later: TurnSummaries } | undefined;
  /** Open loop: arrivals in the window, those refused (too many in flight), and each arrival -> its send, ms. */
  readonly arrivals: { readonly count: number; readonly refused: number; readonly lateMs: Summary } | undefined;
}

/** The per-service CPU phase: the model's TTFT, and how long it warms up and measures. */
export const CPU_PHASE = { modelTtftMs: 200, warmupSeconds: 10, seconds: 30 };

/** Issue 31's targets: CPU per text-only turn across the services, the platform's share at 16 sessions. */
const TARGET = { cpuMs: 15, overheadP50: 5, overheadP95: 15, sessions: 16 };

export const closedLoop = (sessions: number, turnsPerSession = 1): TurnLoop => ({ kind: "closed", sessions, turnsPerSession });

const servicesMs = (f: TurnCpuFigures): number => f.cpuMsPerTurn.sessionLog + f.cpuMsPerTurn.harness + f.cpuMsPerTurn.postgres + f.cpuMsPerTurn.kafka;
const pair = (s: Summary): string => `${ms(s.p50)} / ${ms(s.p95)}`;
const trio = (s: Summary): string => `${ms(s.p50)} / ${ms(s.p95)} / ${ms(s.p99)}`;
const loadCell = (f: TurnCpuFigures): string => `${f.load[0].toFixed(1)}-${f.load[1].toFixed(1)}`;

export function turnCpuTable(figs: readonly TurnCpuFigures[], phase: { modelTtftMs: number; warmupSeconds: number; seconds: number }): Table {
  return {
    title: `CPU per text-only turn by process, ms (session log and harness each their own process; model TTFT ${phase.modelTtftMs} ms, ${phase.seconds} s after ${phase.warmupSeconds} s warm-up)`,
    columns: ["load", "turns", "turns/s", "turn p50 / p95 ms", "TTFT p50 / p95 ms", "platform's share p50 / p95 / p99 ms", "session log", "harness", "postgres", "kafka", "bench process (model, clients)", "services total", "machine", "load 1m"],
    rows: figs.map((f) => [
      loopLabel(f.loop),
      f.turns,
      f.turnsPerSecond.toFixed(1),
      pair(f.turnMs),
      pair(f.ttftMs),
      trio(f.overheadMs),
      ms(f.cpuMsPerTurn.sessionLog),
      ms(f.cpuMsPerTurn.harness),
      ms(f.cpuMsPerTurn.postgres),
      ms(f.cpuMsPerTurn.kafka),
      ms(f.cpuMsPerTurn.benchProcess),
      ms(servicesMs(f)),
      ms(f.cpuMsPerTurn.machine),
      loadCell(f),
    ]),
  };
}

/** Where the share went, per load; sessions of several turns add a row for turn 1 and one for turns 2..n. */
export function segmentTable(figs: readonly TurnCpuFigures[]): Table {
  const row = (label: string, s: TurnSummaries): Array<string | number> => [label, s.ttftMs.n, pair(s.ttftMs), trio(s.overheadMs), ...SEGMENT_KEYS.map((k) => trio(s.segments[k]))];
  return {
    title: "Where the platform's share went, p50 / p95 / p99 ms per turn (wall clock)",
    columns: ["load, turns", "n", "TTFT p50 / p95", "share", "EmitEvent(user.message) round trip", "Wake round trip (lease, short log read)", "Wake returned -> request at the model", "model's first delta -> at the watcher"],
    rows: figs.flatMap((f) => {
      const label = loopLabel(f.loop);
      if (f.byTurn === undefined) return [row(label, f)];
      const n = f.loop.kind === "closed" ? f.loop.turnsPerSession : 1;
      return [row(`${label}: every turn`, f), row(`${label}: turn 1`, f.byTurn.first), row(`${label}: turns 2..${n}`, f.byTurn.later)];
    }),
  };
}

export function openLoopTable(figs: readonly TurnCpuFigures[]): Table | undefined {
  const open = figs.filter((f) => f.arrivals !== undefined);
  if (open.length === 0) return undefined;
  return {
    title: "Open loop: Poisson arrivals at a stated rate, each turn in a new session (arrival -> send: CreateSession, the watch opened, this process's lateness)",
    columns: ["load", "arrivals in the window", "refused (too many in flight)", "turns ended in the window", "arrival -> send p50 / p95 / p99 ms", "load 1m"],
    rows: open.map((f) => [loopLabel(f.loop), f.arrivals!.count, f.arrivals!.refused, f.turns, trio(f.arrivals!.lateMs), loadCell(f)]),
  };
}

export function turnCpuChecks(figs: readonly TurnCpuFigures[]): Check[] {
  return figs
    .filter((f) => f.loop.kind === "closed" && f.loop.sessions === TARGET.sessions && f.loop.turnsPerSession === 1)
    .flatMap((f) => [
      atMost(`CPU per text-only turn, session log + harness + postgres + kafka, ${TARGET.sessions} sessions`, servicesMs(f), TARGET.cpuMs, "ms"),
      atMost(`platform's share p50, text-only turns, services as processes, ${TARGET.sessions} sessions (n=${f.overheadMs.n})`, f.overheadMs.p50, TARGET.overheadP50, "ms"),
      atMost(`platform's share p95, text-only turns, services as processes, ${TARGET.sessions} sessions (n=${f.overheadMs.n})`, f.overheadMs.p95, TARGET.overheadP95, "ms"),
    ]);
}

function ticksOf(pids: readonly number[]): number {
  return pids.reduce((n, pid) => n + (processTicks(String(pid))?.ticks ?? 0), 0);
}

/** Every process's ticks at one moment; Postgres by pid, only what serves the run's database (lib/cpu.ts). */
interface Ticks {
  readonly byProcess: Record<string, number>;
  readonly postgres: Map<string, number>;
}

function allTicks(logPid: number, harnessPid: number, database: string): Ticks {
  const { kafka } = postgresAndKafkaTicks();
  return {
    byProcess: { sessionLog: ticksOf([logPid]), harness: ticksOf([harnessPid]), kafka, benchProcess: ticksOf([process.pid]), machine: busyTicks() },
    postgres: postgresTicksOf(database),
  };
}

function ticksUsed(before: Ticks, after: Ticks): Record<string, number> {
  const used: Record<string, number> = { postgres: ticksSince(before.postgres, after.postgres) };
  for (const [k, v] of Object.entries(after.byProcess)) used[k] = v - (before.byProcess[k] ?? 0);
  return used;
}

const finite = (xs: readonly number[]): number[] => xs.filter((x) => !Number.isNaN(x));

export function summarizeTurns(turns: readonly Turn[]): TurnSummaries {
  const segments = Object.fromEntries(SEGMENT_KEYS.map((k) => [k, summarize(finite(turns.map((t) => t.segments[k])))])) as Record<keyof Segments, Summary>;
  return {
    turnMs: summarize(turns.map((t) => t.turnMs)),
    ttftMs: summarize(finite(turns.map((t) => t.ttftMs))),
    overheadMs: summarize(finite(turns.map((t) => t.overheadMs))),
    segments,
  };
}

export interface TurnCpuOptions {
  readonly loop: TurnLoop;
  readonly modelTtftMs: number;
  readonly warmupSeconds: number;
  readonly seconds: number;
  /** A directory for each service process's --cpu-prof profile (the whole run, warm-up included); none by default. */
  readonly cpuProfDir?: string;
}

const profileName = (l: TurnLoop): string => (l.kind === "closed" ? `${l.sessions}x${l.turnsPerSession}` : `open-${l.turnsPerSecond.toFixed(1)}`);

export async function measureTurnCpu(opts: TurnCpuOptions): Promise<TurnCpuFigures> {
  const stack = await startTurnStack({
    modelTtftMs: opts.modelTtftMs,
    nodeArgs: (name) => (opts.cpuProfDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${opts.cpuProfDir}`, `--cpu-prof-name=${name}-${profileName(opts.loop)}.cpuprofile`]),
  });
  try {
    const loadBefore = os.loadavg()[0] ?? NaN;
    const ticks = (): Ticks => allTicks(stack.log.child.pid!, stack.harness.child.pid!, stack.db.name);
    let before: Ticks | undefined;
    let after: Ticks | undefined;
    const result = await drive(stack, opts.loop, opts, {
      atStart: () => (before = ticks()),
      atEnd: () => (after = ticks()),
    });
    const used = ticksUsed(before!, after!);
    const turns = result.turns.length;
    const perTurn = (k: string): number => (((used[k] ?? NaN) / TICKS_PER_SECOND) * 1000) / Math.max(1, turns);
    const several = opts.loop.kind === "closed" && opts.loop.turnsPerSession > 1;
    return {
      loop: opts.loop,
      modelTtftMs: opts.modelTtftMs,
      seconds: result.seconds,
      turns,
      turnsPerSecond: turns / result.seconds,
      cpuMsPerTurn: {
        sessionLog: perTurn("sessionLog"),
        harness: perTurn("harness"),
        postgres: perTurn("postgres"),
        kafka: perTurn("kafka"),
        benchProcess: perTurn("benchProcess"),
        machine: perTurn("machine"),
      },
      ...summarizeTurns(result.turns),
      load: [loadBefore, os.loadavg()[0] ?? NaN],
      byTurn: several ? { first: summarizeTurns(result.turns.filter((t) => t.index === 1)), later: summarizeTurns(result.turns.filter((t) => t.index > 1)) } : undefined,
      arrivals: opts.loop.kind === "open" ? { count: result.arrivals, refused: result.refused, lateMs: summarize(result.turns.map((t) => t.lateMs)) } : undefined,
    };
  } finally {
    await stack.stop();
  }
}

/** The phases `npm run bench -- turn-cpu` runs, from its flags. */
function plan(): { sessions: number[]; turnsPerSession: number[]; openRates: number[] | undefined; phase: typeof CPU_PHASE } {
  const quick = hasFlag("quick");
  const seconds = numbersFlag("seconds")?.[0] ?? (quick ? 10 : CPU_PHASE.seconds);
  const warmupSeconds = numbersFlag("warmup")?.[0] ?? (quick ? 3 : CPU_PHASE.warmupSeconds);
  const openArg = process.argv.some((a) => a === "--open-rates=");
  return {
    sessions: numbersFlag("sessions") ?? [1, 16],
    turnsPerSession: numbersFlag("turns-per-session") ?? [1, 5],
    openRates: openArg ? [] : numbersFlag("open-rates"),
    phase: { modelTtftMs: CPU_PHASE.modelTtftMs, warmupSeconds, seconds },
  };
}

export const turnCpuBench: Bench = {
  name: "turn-cpu",
  title: "CPU per text-only turn by process, TTFT and the platform's share: closed loops of 1 and 16 sessions (1 and 5 turns each), an open loop",
  run: async () => {
    const cpuProfDir = hasFlag("cpu-prof") ? new URL("./results/cpu-prof/", import.meta.url).pathname : undefined;
    if (cpuProfDir !== undefined) mkdirSync(cpuProfDir, { recursive: true });
    const p = plan();
    const figs: TurnCpuFigures[] = [];
    const measure = async (loop: TurnLoop): Promise<TurnCpuFigures> => {
      const f = await measureTurnCpu({ loop, ...p.phase, ...(cpuProfDir === undefined ? {} : { cpuProfDir }) });
      figs.push(f);
      console.log(`  ${loopLabel(loop)}: ${f.turnsPerSecond.toFixed(1)} turns/s, share p50 ${ms(f.overheadMs.p50)} ms, services ${ms(servicesMs(f))} ms CPU/turn (load ${loadCell(f)})`);
      return f;
    };
    for (const turnsPerSession of p.turnsPerSession) for (const sessions of p.sessions) await measure(closedLoop(sessions, turnsPerSession));
    // The open loop's rates: as stated, else the closed loop's of 16 single-turn sessions measured above, and half of it.
    const base = figs.find((f) => f.loop.kind === "closed" && f.loop.sessions === 16 && f.loop.turnsPerSession === 1);
    const rates = p.openRates ?? (base === undefined ? [] : [base.turnsPerSecond, base.turnsPerSecond / 2]);
    for (const turnsPerSecond of rates) if (turnsPerSecond > 0) await measure({ kind: "open", turnsPerSecond });
    const open = openLoopTable(figs);
    return {
      name: "turn-cpu",
      title: turnCpuBench.title,
      tables: [turnCpuTable(figs, p.phase), segmentTable(figs), ...(open === undefined ? [] : [open])],
      checks: turnCpuChecks(figs),
      notes: [
        "TTFT is from the client's send of EmitEvent(user.message) through the Wake RPC (as the gateway does both) to the first token delta at a client that watched the session beforehand; the platform's share subtracts the offline model's own TTFT (its receipt of the request to its first delta written) per turn",
        "postgres: the backends of the run's database and the server's shared processes (checkpointer, WAL writer...), alive at the window's end (lib/cpu.ts postgresTicksOf); other databases' backends (other work on the machine) are not counted",
        "closed loop: each of N workers runs sessions of the stated turns back to back (CreateSession and the watch included in the CPU, not in a turn's times); with several turns a session keeps its watch, and the harness is woken again for each turn",
        `open loop: turns arrive as a Poisson process at the stated rate${p.openRates === undefined ? " (the 16-session closed loop's turns/s in this run, and half of it)" : ""}, each in a new session, however many are in flight (up to 256); its times count from the send, and arrival -> send is printed apart`,
        ...(cpuProfDir === undefined ? [] : [`CPU profiles (the whole run, warm-up included): ${cpuProfDir}`]),
      ],
      data: { figs, phase: p.phase },
    };
  },
};

runIfMain(turnCpuBench, import.meta.url);
