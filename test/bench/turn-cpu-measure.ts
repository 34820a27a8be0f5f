/**
 * One phase of the turn-cpu benchmark: its services started (turn-cpu-stack.ts), driven in a
 * closed or open loop (turn-cpu-driver.ts) through a warm-up and a measured window, then its
 * floors measured on the same services (turn-cpu-floors.ts), then everything stopped. Over the
 * window: each process's CPU from /proc (Postgres: only what serves the run's database), and each
 * process's event-loop delay (the services' own /metrics gauges, this process's sampler, and an
 * idle process's as the machine's floor: lib/loop-delay.ts).
 */
import type { ChildProcess } from "node:child_process";
import os from "node:os";
import { monotonicUs, splitProfile, type CpuSplit } from "./lib/cpu-profile-split.js";
import { callCounter, perTurn as countsPerTurn, type CallCounter } from "./lib/call-counts.js";
import { busyTicks, javaTicks, postgresTicksOf, processTicks, ticksOfBoth, ticksSince, TICKS_PER_SECOND } from "./lib/cpu.js";
import { idleProbe, metricsUrlOf, ownLoopDelay, scrapeLoopDelay, type LoopDelay } from "./lib/loop-delay.js";
import { summarize, type Summary } from "./lib/stats.js";
import { drive, SEGMENT_KEYS, type Segments, type Turn, type TurnLoop } from "./turn-cpu-driver.js";
import { measureFloors, type Floors } from "./turn-cpu-floors.js";
import { startTurnStack, type StackService, type TurnStack } from "./turn-cpu-stack.js";
import type { Via } from "./turn-cpu-driver.js";

/** Latency figures of a set of turns. */
export interface TurnSummaries {
  /** user.message sent -> status_idle seen by the waiting client, ms. */
  readonly turnMs: Summary;
  /** user.message sent -> first token delta at the watcher, ms. */
  readonly ttftMs: Summary;
  /** The platform's share: TTFT less the model's own (its receipt of the request to its first delta written), per turn, ms. */
  readonly overheadMs: Summary;
  /** Where the platform's share went, ms per turn (the bench process's clock, sub-ms). */
  readonly segments: Readonly<Record<keyof Segments, Summary>>;
  /** Wake sent -> the request at the model (Wake's round trip and what follows it, together: Wake returns after the request left). */
  readonly wakeToModelMs: Summary;
}

export type CpuProcess = "sessionLog" | "harness" | "gateway" | "postgres" | "kafka" | "benchProcess" | "machine";

/** The processes whose event loop is measured: the services' (the gateway's with --via=sdk), the bench's, an idle one's. */
export type LoopProcess = "sessionLog" | "harness" | "gateway" | "benchProcess" | "idleProcess";

export interface TurnCpuFigures extends TurnSummaries {
  readonly loop: TurnLoop;
  /** How turns went in: over gRPC with the bench as the gateway, or through the SDK and the gateway's process. */
  readonly via: Via;
  readonly modelTtftMs: number;
  readonly seconds: number;
  readonly turns: number;
  readonly turnsPerSecond: number;
  /** ms of CPU per turn, by process (the gateway's NaN over gRPC: not in the run). */
  readonly cpuMsPerTurn: Readonly<Record<CpuProcess, number>>;
  readonly load: readonly [number, number];
  /** Sessions of more than one turn: the first turns and the later ones (2..n) apart. */
  readonly byTurn: { readonly first: TurnSummaries; readonly later: TurnSummaries } | undefined;
  /** Open loop: arrivals in the window, those refused (too many in flight), and each arrival -> its send, ms. */
  readonly arrivals: { readonly count: number; readonly refused: number; readonly lateMs: Summary } | undefined;
  /** Measured after the window on the same services. */
  readonly floors: Floors;
  /** With cpuProfDir: where the session log's and the harness's CPU (and the gateway's, through the SDK) went in the window (lib/cpu-profile-split.ts). */
  readonly cpuSplit: Readonly<Record<"sessionLog" | "harness", CpuSplit> & { readonly gateway?: CpuSplit }> | undefined;
  /** What the session log and the harness (and the gateway, through the SDK) sent and allocated per turn over the window (lib/call-counter.ts); undefined unless counted. */
  readonly countsPerTurn: Readonly<Record<"sessionLog" | "harness", Record<string, number>> & { readonly gateway?: Record<string, number> }> | undefined;
  /** Each process's event loop over the window (undefined: the services ran without metrics). */
  readonly loopDelay: Readonly<Partial<Record<LoopProcess, LoopDelay>>> | undefined;
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
  /** Turns over gRPC (the default) or through the SDK and the gateway's process. */
  readonly via?: Via;
  /**
   * Count what the session log and the harness (and the gateway, through the SDK) send (gRPC
   * calls, Postgres statements, socket writes) and allocate over the window (lib/call-counter.ts,
   * loaded into each with tsx's loader).
   * Not with cpuProfDir: the loader's thread would write its profile over the main thread's.
   */
  readonly counts?: boolean;
  /** Node flags added to a service's process after those its package declares (a later V8 flag wins), for A/B runs of GC settings. */
  readonly nodeFlags?: Partial<Record<StackService, readonly string[]>>;
}

const ticksOf = (pid: number): number => processTicks(String(pid))?.ticks ?? 0;

/** Every process's ticks at one moment; Postgres by pid, only what serves the run's database, and Kafka by pid (lib/cpu.ts). */
export interface Ticks {
  readonly byProcess: Record<string, number>;
  readonly postgres: Map<string, number>;
  readonly kafka: Map<string, number>;
}

export function allTicks(stack: TurnStack): Ticks {
  const gateway = stack.gateway?.process.child.pid;
  return {
    byProcess: {
      sessionLog: ticksOf(stack.log.child.pid!),
      harness: ticksOf(stack.harness.child.pid!),
      ...(gateway === undefined ? {} : { gateway: ticksOf(gateway) }),
      benchProcess: ticksOf(process.pid),
      machine: busyTicks(),
    },
    // The gateway's database too when it runs: its statements are the turn's.
    postgres: postgresTicksOf(stack.gateway === undefined ? [stack.db.name] : [stack.db.name, stack.gateway.db.name]),
    kafka: javaTicks(),
  };
}

export function ticksUsed(before: Ticks, after: Ticks): Record<string, number> {
  const used: Record<string, number> = { postgres: ticksSince(before.postgres, after.postgres), kafka: ticksOfBoth(before.kafka, after.kafka) };
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

const profileName = (l: TurnLoop, via: Via): string => `${l.kind === "closed" ? `${l.sessions}x${l.turnsPerSession}${l.turnsPerSecond === undefined ? "" : `-at${l.turnsPerSecond}`}` : `open-${l.turnsPerSecond.toFixed(1)}`}${via === "sdk" ? "-sdk" : ""}`;
const profileFile = (service: string, l: TurnLoop, via: Via): string => `${service}-${profileName(l, via)}.cpuprofile`;

export async function measureTurnCpu(opts: TurnCpuOptions): Promise<TurnCpuFigures> {
  const metrics = opts.metrics ?? true;
  if (opts.counts === true && opts.cpuProfDir !== undefined) throw new Error("turn-cpu: counts and CPU profiles are taken in separate runs (--counts or --cpu-prof)");
  const via = opts.via ?? "grpc";
  const counters: Partial<Record<StackService, CallCounter>> | undefined =
    opts.counts === true
      ? { "session-log": callCounter("session-log"), harness: callCounter("harness"), ...(via === "sdk" ? { gateway: callCounter("gateway") } : {}) }
      : undefined;
  const stack = await startTurnStack({
    modelTtftMs: opts.modelTtftMs,
    gateway: via === "sdk",
    nodeArgs: (name) => [
      ...(opts.nodeFlags?.[name] ?? []),
      ...(counters?.[name]?.nodeArgs ?? []),
      ...(opts.cpuProfDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${opts.cpuProfDir}`, `--cpu-prof-name=${profileFile(name, opts.loop, via)}`]),
    ],
    env: { ...(metrics ? { MH_METRICS_PORT: "0" } : {}), ...(opts.lingerMs === undefined ? {} : { MH_IDLE_LINGER_MS: String(opts.lingerMs) }) },
    serviceEnv: (name) => counters?.[name]?.env ?? {},
  }).catch(async (err: unknown) => {
    await Promise.all(Object.values(counters ?? {}).map((c) => c.dispose()));
    throw err;
  });
  const own = ownLoopDelay();
  let idle: Awaited<ReturnType<typeof idleProbe>> | undefined;
  try {
    const services: Array<[LoopProcess, { child: { pid?: number | undefined }; port: number }]> = [["sessionLog", stack.log], ["harness", stack.harness]];
    if (stack.gateway !== undefined) services.push(["gateway", stack.gateway.process]);
    const urls = metrics ? await Promise.all(services.map(async ([k, p]) => [k, await metricsUrlOf(p.child.pid!, p.port)] as const)) : undefined;
    idle = await idleProbe();
    const probe = idle;
    const loops = async (): Promise<Partial<Record<LoopProcess, LoopDelay>> | undefined> => {
      const benchProcess = own.read();
      const idleProcess = await probe.read();
      if (urls === undefined) return undefined;
      const scraped = await Promise.all(urls.map(async ([k, url]) => [k, await scrapeLoopDelay(url)] as const));
      return { ...Object.fromEntries(scraped), benchProcess, idleProcess };
    };
    const loadBefore = os.loadavg()[0] ?? NaN;
    const ticks = (): Ticks => allTicks(stack);
    let before: Ticks | undefined;
    let after: Ticks | undefined;
    let loopDelay: Awaited<ReturnType<typeof loops>>;
    const windowUs = { from: NaN, to: NaN };
    type Counts = Record<"sessionLog" | "harness", Record<string, number>> & { gateway?: Record<string, number> };
    const readCounts = async (): Promise<Counts | undefined> => {
      if (counters === undefined) return undefined;
      const read = (c: CallCounter | undefined, child: ChildProcess | undefined): Promise<Record<string, number>> =>
        c === undefined || child === undefined ? Promise.resolve({}) : c.read(child);
      const [sessionLog, harness, gateway] = await Promise.all([
        read(counters["session-log"], stack.log.child),
        read(counters.harness, stack.harness.child),
        read(counters.gateway, stack.gateway?.process.child),
      ]);
      return { sessionLog, harness, ...(counters.gateway === undefined ? {} : { gateway }) };
    };
    let countsBefore: Awaited<ReturnType<typeof readCounts>>;
    let countsAfter: Awaited<ReturnType<typeof readCounts>>;
    const result = await drive(stack, opts.loop, opts, {
      // CPU first, at the edge itself; the loops' windows start and end a few ms later.
      atStart: async () => {
        windowUs.from = monotonicUs();
        before = ticks();
        countsBefore = await readCounts();
        await loops();
      },
      atEnd: async () => {
        after = ticks();
        windowUs.to = monotonicUs();
        countsAfter = await readCounts();
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
    const split = (service: string): CpuSplit => splitProfile(`${dir}/${profileFile(service, opts.loop, via)}`, windowUs.from, windowUs.to);
    return {
      loop: opts.loop,
      via,
      modelTtftMs: opts.modelTtftMs,
      seconds: result.seconds,
      turns,
      turnsPerSecond: turns / result.seconds,
      cpuMsPerTurn: {
        sessionLog: perTurn("sessionLog"),
        harness: perTurn("harness"),
        gateway: perTurn("gateway"),
        postgres: perTurn("postgres"),
        kafka: perTurn("kafka"),
        benchProcess: perTurn("benchProcess"),
        machine: perTurn("machine"),
      },
      ...summarizeTurns(result.turns),
      load: [loadBefore, loadAfter],
      byTurn: several ? { first: summarizeTurns(result.turns.filter((t) => t.index === 1)), later: summarizeTurns(result.turns.filter((t) => t.index > 1)) } : undefined,
      arrivals: opts.loop.turnsPerSecond !== undefined ? { count: result.arrivals, refused: result.refused, lateMs: summarize(result.turns.map((t) => t.lateMs)) } : undefined,
      floors,
      cpuSplit: dir === undefined ? undefined : { sessionLog: split("session-log"), harness: split("harness"), ...(via === "sdk" ? { gateway: split("gateway") } : {}) },
      countsPerTurn:
        countsBefore === undefined || countsAfter === undefined
          ? undefined
          : {
              sessionLog: countsPerTurn(countsBefore.sessionLog, countsAfter.sessionLog, turns),
              harness: countsPerTurn(countsBefore.harness, countsAfter.harness, turns),
              ...(countsAfter.gateway === undefined ? {} : { gateway: countsPerTurn(countsBefore.gateway ?? {}, countsAfter.gateway, turns) }),
            },
      loopDelay: loopDelay!,
    };
  } finally {
    own.stop();
    await idle?.stop();
    await stack.stop();
    await Promise.all(Object.values(counters ?? {}).map((c) => c.dispose()));
  }
}
