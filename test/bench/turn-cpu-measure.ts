/**
 * One phase of the turn-cpu benchmark: its services started (turn-cpu-stack.ts), driven in a
 * closed or open loop (turn-cpu-driver.ts) through a warm-up and a measured window, then its
 * floors measured on the same services (turn-cpu-floors.ts), then everything stopped. Over the
 * window: each process's CPU from /proc (Postgres: only what serves the run's database), and each
 * process's event-loop delay (the services' own /metrics gauges, this process's sampler, and an
 * idle process's as the machine's floor: lib/loop-delay.ts).
 */
import os from "node:os";
import { monotonicUs, splitProfile, type CpuSplit } from "./lib/cpu-profile-split.js";
import { busyTicks, postgresAndKafkaTicks, postgresTicksOf, processTicks, ticksSince, TICKS_PER_SECOND } from "./lib/cpu.js";
import { idleProbe, metricsUrlOf, ownLoopDelay, scrapeLoopDelay, type LoopDelay } from "./lib/loop-delay.js";
import { summarize, type Summary } from "./lib/stats.js";
import { drive, SEGMENT_KEYS, type Segments, type Turn, type TurnLoop } from "./turn-cpu-driver.js";
import { measureFloors, type Floors } from "./turn-cpu-floors.js";
import { startTurnStack } from "./turn-cpu-stack.js";

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
  /** Wake sent -> the request at the model (Wake's round trip and what follows it, together: Wake returns after the request left). */
  readonly wakeToModelMs: Summary;
}

export type CpuProcess = "sessionLog" | "harness" | "postgres" | "kafka" | "benchProcess" | "machine";

export interface TurnCpuFigures extends TurnSummaries {
  readonly loop: TurnLoop;
  readonly modelTtftMs: number;
  readonly seconds: number;
  readonly turns: number;
  readonly turnsPerSecond: number;
  /** ms of CPU per turn, by process. */
  readonly cpuMsPerTurn: Readonly<Record<CpuProcess, number>>;
  readonly load: readonly [number, number];
  /** Sessions of more than one turn: the first turns and the later ones (2..n) apart. */
  readonly byTurn: { readonly first: TurnSummaries; readonly later: TurnSummaries } | undefined;
  /** Open loop: arrivals in the window, those refused (too many in flight), and each arrival -> its send, ms. */
  readonly arrivals: { readonly count: number; readonly refused: number; readonly lateMs: Summary } | undefined;
  /** Measured after the window on the same services. */
  readonly floors: Floors;
  /** With cpuProfDir: where the session log's and the harness's CPU went in the window (lib/cpu-profile-split.ts). */
  readonly cpuSplit: Readonly<Record<"sessionLog" | "harness", CpuSplit>> | undefined;
  /** Each process's event loop over the window (undefined: the services ran without metrics). */
  readonly loopDelay: Readonly<Record<"sessionLog" | "harness" | "benchProcess" | "idleProcess", LoopDelay>> | undefined;
}

export interface TurnCpuOptions {
  readonly loop: TurnLoop;
  readonly modelTtftMs: number;
  readonly warmupSeconds: number;
  readonly seconds: number;
  /** A directory for each service process's --cpu-prof profile (the whole run, warm-up included); none by default. */
  readonly cpuProfDir?: string;
  /** Serve each service's /metrics (MH_METRICS_PORT) for its event-loop delay; true by default. */
  readonly metrics?: boolean;
  /** The harness's MH_IDLE_LINGER_MS (how long it keeps a session after its turn); its default when undefined. */
  readonly lingerMs?: number;
}

const ticksOf = (pid: number): number => processTicks(String(pid))?.ticks ?? 0;

/** Every process's ticks at one moment; Postgres by pid, only what serves the run's database (lib/cpu.ts). */
interface Ticks {
  readonly byProcess: Record<string, number>;
  readonly postgres: Map<string, number>;
}

function allTicks(logPid: number, harnessPid: number, database: string): Ticks {
  const { kafka } = postgresAndKafkaTicks();
  return {
    byProcess: { sessionLog: ticksOf(logPid), harness: ticksOf(harnessPid), kafka, benchProcess: ticksOf(process.pid), machine: busyTicks() },
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
    wakeToModelMs: summarize(finite(turns.map((t) => t.segments.wake + t.segments.toModel))),
  };
}

const profileName = (l: TurnLoop): string => (l.kind === "closed" ? `${l.sessions}x${l.turnsPerSession}` : `open-${l.turnsPerSecond.toFixed(1)}`);
const profileFile = (service: string, l: TurnLoop): string => `${service}-${profileName(l)}.cpuprofile`;

export async function measureTurnCpu(opts: TurnCpuOptions): Promise<TurnCpuFigures> {
  const metrics = opts.metrics ?? true;
  const stack = await startTurnStack({
    modelTtftMs: opts.modelTtftMs,
    nodeArgs: (name) => (opts.cpuProfDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${opts.cpuProfDir}`, `--cpu-prof-name=${profileFile(name, opts.loop)}`]),
    env: { ...(metrics ? { MH_METRICS_PORT: "0" } : {}), ...(opts.lingerMs === undefined ? {} : { MH_IDLE_LINGER_MS: String(opts.lingerMs) }) },
  });
  const own = ownLoopDelay();
  let idle: Awaited<ReturnType<typeof idleProbe>> | undefined;
  try {
    const logPid = stack.log.child.pid!;
    const harnessPid = stack.harness.child.pid!;
    const urls = metrics ? { sessionLog: await metricsUrlOf(logPid, stack.log.port), harness: await metricsUrlOf(harnessPid, stack.harness.port) } : undefined;
    idle = await idleProbe();
    const probe = idle;
    const loops = async (): Promise<Record<"sessionLog" | "harness" | "benchProcess" | "idleProcess", LoopDelay> | undefined> => {
      const benchProcess = own.read();
      const idleProcess = await probe.read();
      if (urls === undefined) return undefined;
      const [sessionLog, harness] = await Promise.all([scrapeLoopDelay(urls.sessionLog), scrapeLoopDelay(urls.harness)]);
      return { sessionLog, harness, benchProcess, idleProcess };
    };
    const loadBefore = os.loadavg()[0] ?? NaN;
    const ticks = (): Ticks => allTicks(logPid, harnessPid, stack.db.name);
    let before: Ticks | undefined;
    let after: Ticks | undefined;
    let loopDelay: Awaited<ReturnType<typeof loops>>;
    const windowUs = { from: NaN, to: NaN };
    const result = await drive(stack, opts.loop, opts, {
      // CPU first, at the edge itself; the loops' windows start and end a few ms later.
      atStart: async () => {
        windowUs.from = monotonicUs();
        before = ticks();
        await loops();
      },
      atEnd: async () => {
        after = ticks();
        windowUs.to = monotonicUs();
        loopDelay = await loops();
      },
    });
    const loadAfter = os.loadavg()[0] ?? NaN;
    const floors = await measureFloors(stack);
    const used = ticksUsed(before!, after!);
    const turns = result.turns.length;
    const perTurn = (k: CpuProcess): number => (((used[k] ?? NaN) / TICKS_PER_SECOND) * 1000) / Math.max(1, turns);
    const several = opts.loop.kind === "closed" && opts.loop.turnsPerSession > 1;
    // Each profile is written when its process exits.
    await stack.stop();
    const dir = opts.cpuProfDir;
    const split = (service: string): CpuSplit => splitProfile(`${dir}/${profileFile(service, opts.loop)}`, windowUs.from, windowUs.to);
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
      load: [loadBefore, loadAfter],
      byTurn: several ? { first: summarizeTurns(result.turns.filter((t) => t.index === 1)), later: summarizeTurns(result.turns.filter((t) => t.index > 1)) } : undefined,
      arrivals: opts.loop.kind === "open" ? { count: result.arrivals, refused: result.refused, lateMs: summarize(result.turns.map((t) => t.lateMs)) } : undefined,
      floors,
      cpuSplit: dir === undefined ? undefined : { sessionLog: split("session-log"), harness: split("harness") },
      loopDelay: loopDelay!,
    };
  } finally {
    own.stop();
    await idle?.stop();
    await stack.stop();
  }
}
