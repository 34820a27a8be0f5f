/**
 * Where a single-turn SDK session's CPU goes, step by step and process by process (issue 31):
 * `turn-cpu --via=sdk` prices a session of one turn whole, its own life (sessions.create, the
 * stream, the first wake) folded into its turn. Here the same stack (turn-cpu-stack.ts: the
 * session log, the harness and the gateway each a process, the offline model at 200 ms TTFT)
 * runs four closed loops of N workers in turn, each through a warm-up and a measured window:
 *  1. `sessions.create` alone;
 *  2. that and the session's event stream opened (token previews, as turn-cpu's) and closed;
 *  3. that and one turn: a single-turn session as turn-cpu's (events.send, read to its idle);
 *  4. sessions of 5 turns, as turn-cpu's (whose later turns carry a short history, not a long one).
 * First the stack idle (0), for what each process spends a second whatever the load. Each
 * process's CPU (from /proc; Postgres only the run's two databases) per unit of its loop,
 * and the steps as differences: create = 1, stream = 2 - 1, a session's turn = 3 - 2, of which a
 * later turn's work = (5 x 4 - 3) / 4 (a session of 5 less one of 1, over the 4 turns more) and
 * the first turn's own (the Wake's lease and read, the harness's follow opened and closed, its
 * linger ending) the rest; each loop's idle share (0's ms a second over its units a second) is
 * taken out before the differences, so a slower loop's units do not carry more of it. `--counts` prints each process's gRPC calls and
 * statements per unit (lib/call-counter.ts; not with timings that matter: the counter's loader
 * costs CPU). Flags: `--sessions=16`, `--seconds=20`, `--warmup=8`, `--counts`.
 */
import type { ChildProcess } from "node:child_process";
import os from "node:os";
import { callCounter, perTurn, type CallCounter } from "./lib/call-counts.js";
import { TICKS_PER_SECOND } from "./lib/cpu.js";
import { hasFlag, numbersFlag } from "./lib/flags.js";
import { ms, runIfMain, type Bench, type Cell, type Table } from "./lib/report.js";
import { drive, type TurnLoop } from "./turn-cpu-driver.js";
import { allTicks, ticksUsed, type Ticks } from "./turn-cpu-measure.js";
import { startTurnStack, type StackService, type TurnStack } from "./turn-cpu-stack.js";

const PROCESSES = ["gateway", "sessionLog", "harness", "postgres", "kafka"] as const;
type Process = (typeof PROCESSES)[number];
const COUNTED: ReadonlyArray<readonly [StackService, "gateway" | "sessionLog" | "harness"]> = [
  ["gateway", "gateway"],
  ["session-log", "sessionLog"],
  ["harness", "harness"],
];

interface Window {
  atStart(): Promise<void>;
  atEnd(): Promise<void>;
}

interface PhaseResult {
  readonly name: string;
  readonly units: number;
  /** ms of CPU per unit, by process. */
  readonly cpu: Record<Process, number>;
  /** Per unit, by process and key (`--counts`). */
  readonly counts: Partial<Record<"gateway" | "sessionLog" | "harness", Record<string, number>>>;
  readonly load: readonly [number, number];
}

const sleep = (msec: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, msec)));

/** `workers` loops of `unit` through a warm-up and a window; the units finished inside the window. */
async function closedLoop(workers: number, phase: { warmupSeconds: number; seconds: number }, window: Window, unit: () => Promise<void>): Promise<number> {
  let measuring = false;
  let stop = false;
  let units = 0;
  const failures: unknown[] = [];
  const all = Promise.all(
    Array.from({ length: workers }, async () => {
      while (!stop && failures.length === 0) {
        try {
          await unit();
        } catch (err) {
          failures.push(err);
        }
        if (measuring) units++;
      }
    }),
  );
  try {
    await sleep(phase.warmupSeconds * 1000);
    await window.atStart();
    measuring = true;
    await sleep(phase.seconds * 1000);
    measuring = false;
    await window.atEnd();
  } finally {
    stop = true;
    await all;
  }
  if (failures.length > 0) throw failures[0];
  return units;
}

async function measurePhase(
  stack: TurnStack,
  counters: Partial<Record<StackService, CallCounter>>,
  name: string,
  run: (window: Window) => Promise<number>,
): Promise<PhaseResult> {
  const children: Record<StackService, ChildProcess | undefined> = { gateway: stack.gateway?.process.child, "session-log": stack.log.child, harness: stack.harness.child };
  const readCounts = async (): Promise<Partial<Record<"gateway" | "sessionLog" | "harness", Record<string, number>>>> => {
    const out: Partial<Record<"gateway" | "sessionLog" | "harness", Record<string, number>>> = {};
    for (const [service, key] of COUNTED) {
      const c = counters[service];
      const child = children[service];
      if (c !== undefined && child !== undefined) out[key] = await c.read(child);
    }
    return out;
  };
  let before: Ticks | undefined;
  let after: Ticks | undefined;
  let countsBefore: Awaited<ReturnType<typeof readCounts>> = {};
  let countsAfter: Awaited<ReturnType<typeof readCounts>> = {};
  const loadBefore = os.loadavg()[0] ?? NaN;
  const units = await run({
    atStart: async () => {
      before = allTicks(stack);
      countsBefore = await readCounts();
    },
    atEnd: async () => {
      after = allTicks(stack);
      countsAfter = await readCounts();
    },
  });
  const used = ticksUsed(before!, after!);
  const per = (k: Process): number => (((used[k] ?? NaN) / TICKS_PER_SECOND) * 1000) / Math.max(1, units);
  const counts: PhaseResult["counts"] = {};
  for (const [, key] of COUNTED) {
    const a = countsAfter[key];
    if (a !== undefined) counts[key] = perTurn(countsBefore[key] ?? {}, a, units);
  }
  return { name, units, cpu: Object.fromEntries(PROCESSES.map((p) => [p, per(p)])) as Record<Process, number>, counts, load: [loadBefore, os.loadavg()[0] ?? NaN] };
}

const scale = (a: Record<Process, number>, k: number): Record<Process, number> => Object.fromEntries(PROCESSES.map((p) => [p, a[p] * k])) as Record<Process, number>;
const total = (cpu: Record<Process, number>): number => PROCESSES.reduce((n, p) => n + cpu[p], 0);
const minus = (a: Record<Process, number>, b: Record<Process, number>): Record<Process, number> =>
  Object.fromEntries(PROCESSES.map((p) => [p, a[p] - b[p]])) as Record<Process, number>;
const cpuCells = (cpu: Record<Process, number>): Cell[] => [...PROCESSES.map((p) => ms(cpu[p])), ms(total(cpu))];
const CPU_COLUMNS = ["gateway", "session log", "harness", "postgres", "kafka", "in all"];

/** The counted keys worth a row: calls, statements, socket writes and heap. */
const COUNT_KEY = /^(grpc |sql |socket writes|heap KB|h2 )/;

function countsTable(phases: readonly PhaseResult[]): Table | undefined {
  if (phases.every((p) => Object.keys(p.counts).length === 0)) return undefined;
  const keys = new Set<string>();
  for (const p of phases) for (const [, key] of COUNTED) for (const k of Object.keys(p.counts[key] ?? {})) if (COUNT_KEY.test(k)) keys.add(`${key}\t${k}`);
  const rows = [...keys].sort().map((both) => {
    const [proc, k] = both.split("\t") as [keyof PhaseResult["counts"], string];
    return [`${proc}: ${k}`, ...phases.map((p) => (p.counts[proc]?.[k] ?? 0).toFixed(2))];
  });
  return { title: "Counted per unit of each loop in each process (lib/call-counter.ts)", columns: ["what", ...phases.map((p) => p.name)], rows };
}

export const sessionStepsBench: Bench = {
  name: "session-steps",
  title: "A single-turn SDK session's CPU by step and by process: sessions.create, the stream opened and closed, the first turn, a later turn",
  run: async () => {
    const workers = numbersFlag("sessions")?.[0] ?? 16;
    const phase = { warmupSeconds: numbersFlag("warmup")?.[0] ?? 8, seconds: numbersFlag("seconds")?.[0] ?? 20 };
    const counters: Partial<Record<StackService, CallCounter>> = hasFlag("counts") ? { gateway: callCounter("gateway"), "session-log": callCounter("session-log"), harness: callCounter("harness") } : {};
    const stack = await startTurnStack({
      modelTtftMs: 200,
      gateway: true,
      env: { MH_METRICS_PORT: "0" },
      nodeArgs: (s) => counters[s]?.nodeArgs ?? [],
      serviceEnv: (s) => counters[s]?.env ?? {},
    }).catch(async (err: unknown) => {
      await Promise.all(Object.values(counters).map((c) => c.dispose()));
      throw err;
    });
    const phases: PhaseResult[] = [];
    let idle: PhaseResult | undefined;
    try {
      const gateway = stack.gateway!;
      const sdk = gateway.sdk();
      const create = async (): Promise<string> => (await sdk.beta.sessions.create({ agent: gateway.agentId, environment_id: gateway.environmentId })).id;
      idle = await measurePhase(stack, counters, "0. idle (per second)", async (w) => {
        await w.atStart();
        await sleep(phase.seconds * 1000);
        await w.atEnd();
        return phase.seconds;
      });
      phases.push(await measurePhase(stack, counters, "1. sessions.create", (w) => closedLoop(workers, phase, w, async () => void (await create()))));
      phases.push(
        await measurePhase(stack, counters, "2. and its stream opened, closed", (w) =>
          closedLoop(workers, phase, w, async () => {
            const stream = await sdk.beta.sessions.events.stream(await create(), { event_deltas: ["agent.message"] });
            stream.controller.abort();
          }),
        ),
      );
      const turns = async (loop: TurnLoop, w: Window): Promise<number> => (await drive(stack, loop, phase, w)).turns.length;
      phases.push(await measurePhase(stack, counters, "3. and one turn (single-turn sessions)", (w) => turns({ kind: "closed", sessions: workers, turnsPerSession: 1 }, w)));
      phases.push(await measurePhase(stack, counters, "4. sessions of 5 turns (per turn)", (w) => turns({ kind: "closed", sessions: workers, turnsPerSession: 5 }, w)));
    } finally {
      await stack.stop();
      await Promise.all(Object.values(counters).map((c) => c.dispose()));
    }
    // Each loop's CPU per unit less what the processes spend idle in the time a unit takes (units/s of its loop).
    const idlePerSecond = idle.cpu;
    const net = (p: PhaseResult): Record<Process, number> => minus(p.cpu, scale(idlePerSecond, phase.seconds / Math.max(1, p.units)));
    const [p1, p2, p3, p4] = phases.map((p) => ({ ...p, cpu: net(p) })) as [PhaseResult, PhaseResult, PhaseResult, PhaseResult];
    const loadCell = (p: PhaseResult): string => `${p.load[0].toFixed(1)}-${p.load[1].toFixed(1)}`;
    const later = scale(minus(scale(p4.cpu, 5), p3.cpu), 1 / 4);
    const steps: Array<[string, Record<Process, number>]> = [
      ["sessions.create (1)", p1.cpu],
      ["the stream opened and closed (2 - 1)", minus(p2.cpu, p1.cpu)],
      ["the session's one turn (3 - 2)", minus(p3.cpu, p2.cpu)],
      ["  of which a later turn's work ((5 x 4 - 3) / 4)", later],
      ["  of which the first turn's own: lease, read, follow, linger (the rest)", minus(minus(p3.cpu, p2.cpu), later)],
      ["a single-turn session in all (3)", p3.cpu],
    ];
    const counts = countsTable(phases);
    return {
      name: "session-steps",
      title: sessionStepsBench.title,
      tables: [
        {
          title: `CPU per unit of each loop, ms (${workers} workers, ${phase.seconds} s after ${phase.warmupSeconds} s warm-up)`,
          columns: ["loop", "units", "units/s", ...CPU_COLUMNS, "load 1m"],
          rows: [idle, ...phases].map((p) => [p.name, p === idle ? "-" : p.units, p === idle ? "-" : (p.units / phase.seconds).toFixed(1), ...cpuCells(p.cpu), loadCell(p)]),
        },
        { title: "A single-turn session's CPU by step, ms (differences of the loops above, each loop's idle share taken out first: the idle ms a second over its units a second)", columns: ["step", ...CPU_COLUMNS], rows: steps.map(([s, cpu]) => [s, ...cpuCells(cpu)]) },
        ...(counts === undefined ? [] : [counts]),
      ],
      checks: [],
      notes: [
        "each loop on the same stack, one after the other: a difference of two loops is only as good as their windows' loads are alike (load printed); repeat runs to see the spread",
        "Postgres counts the backends of the run's two databases and the server's shared processes; Kafka the broker's JVM",
        "loop 3's lingering harness sessions (MH_IDLE_LINGER_MS) end in loop 4's warm-up, or in loop 3's window, as in turn-cpu",
        "a process's CPU per unit includes what it spends per second whatever the load (timers, metrics, sweeps: loop 0, idle, ms per second), spread over its loop's units, more per unit in a slower loop: the steps take it out of each loop before the differences",
      ],
      data: { workers, phase, idle, phases },
    };
  },
};

runIfMain(sessionStepsBench, import.meta.url);
