/**
 * Turns per second and TTFT as load grows over 1, 2 and 4 harness processes (issue 31): every
 * service its own process (session log, the harnesses, the gateway) on the real Postgres and
 * Kafka, sessions spread over the harnesses by the Kafka wake group (scale-stack.ts), driven
 * through the official SDK with text-only turns against the offline model (a stated TTFT).
 * `sessions` sessions in a closed loop: each opens its event stream once (with token previews,
 * as a UI does), then sends a user.message and waits for session.status_idle, again and again.
 * TTFT is the send to the first preview frame; the platform's share subtracts the model's own
 * TTFT of that request. Each process's CPU over the measured window (percent of one core, from
 * /proc) says which part saturates first. `npm run bench -- harness-scale` runs every point;
 * `-- harness-scale --quick` runs 1 and 2 harnesses at 4 sessions, briefly, to check it works.
 * `--linger=0,2000` runs every point once per harness MH_IDLE_LINGER_MS, in that order (a stack
 * each), `--pairs=N` N times over (`--harnesses=1 --sessions=4,16`: those points only), for A/B
 * runs alternated in time; besides CPU it prints the session log's gRPC calls served and
 * Postgres's transactions in its database per turn (lib/counts.ts), counts that do not depend on
 * the machine's load. Only turns after a session's first are timed; per-turn figures divide by
 * every turn that ended in the window.
 */
import os from "node:os";
import { defineScenario } from "@metaharness/offline-model";
import { EVENT_TEXT } from "./lib/service.js";
import { ms, runIfMain, type Bench, type BenchReport, type Table } from "./lib/report.js";
import { nowMs, summarize, type Summary } from "./lib/stats.js";
import { TICKS_PER_SECOND } from "./lib/cpu.js";
import { perTurn } from "./lib/call-counts.js";
import { numbersFlag } from "./lib/flags.js";
import { startScaleStack, ticksBetween, type ScaleStack } from "./scale-stack.js";

const SCENARIO = "harness-scale";
const MODEL_TTFT_MS = 200;

interface Point {
  readonly harnesses: number;
  readonly sessions: number;
  /** The harnesses' MH_IDLE_LINGER_MS; undefined: their default. */
  readonly lingerMs?: number | undefined;
}

export interface PointFigures extends Point {
  readonly modelTtftMs: number;
  readonly seconds: number;
  readonly turns: number;
  readonly errors: number;
  readonly turnsPerSecond: number;
  readonly ttftMs: Summary;
  readonly overheadMs: Summary;
  readonly turnMs: Summary;
  /** Percent of one core over the window, by process. */
  readonly cpuPercent: Record<string, number>;
  /** ms of CPU per turn, by process. */
  readonly cpuMsPerTurn: Record<string, number>;
  /** The session log's gRPC calls served per turn, by method. */
  readonly callsPerTurn: Record<string, number>;
  /** Postgres transactions per turn in the session log's database. */
  readonly transactionsPerTurn: number;
  readonly load: readonly [number, number];
  /** What `probe` counted over the window, per turn (gateway-turn.ts: a process's gRPC calls and statements). */
  readonly countsPerTurn: Record<string, number>;
}

/** Counts read at the window's start and end (a process's calls, say), reported per turn. */
export type CountProbe = () => Promise<Record<string, number>>;

const FULL = { harnesses: [1, 2, 4], sessions: [16, 64], warmupSeconds: 8, seconds: 25 };
const QUICK = { harnesses: [1, 2], sessions: [4], warmupSeconds: 3, seconds: 8 };

export async function measure(stack: ScaleStack, point: Point, phase: { warmupSeconds: number; seconds: number }, probe?: CountProbe): Promise<PointFigures> {
  const sdk = stack.sdk();
  const environmentId = (await sdk.beta.environments.create({ name: "scale" })).id;
  const agent = await sdk.beta.agents.create({ name: SCENARIO, model: "claude-sonnet-5-5", system: `[scenario:${SCENARIO}]`, tools: [] });
  const modelTtft = (marker: string): number => {
    const rec = stack.model.requests.findLast((r) => JSON.stringify(r.body).includes(marker));
    return rec?.firstDeltaAt === undefined || rec.receivedAt === undefined ? NaN : rec.firstDeltaAt - rec.receivedAt;
  };
  interface Turn {
    readonly ttftMs: number;
    readonly turnMs: number;
    readonly overheadMs: number;
  }
  const done: Turn[] = [];
  let errors = 0;
  let measuring = false;
  /** Every turn that ended in the window, a session's first included (its work is in the window's CPU and counts). */
  let turnsInWindow = 0;
  let stopAt = Number.POSITIVE_INFINITY;
  const worker = async (): Promise<void> => {
    const sessionId = (await sdk.beta.sessions.create({ agent: agent.id, environment_id: environmentId })).id;
    const stream = await sdk.beta.sessions.events.stream(sessionId, { event_deltas: ["agent.message"] });
    const events = stream[Symbol.asyncIterator]();
    try {
      for (let k = 1; Date.now() < stopAt; k++) {
        const marker = `<${sessionId}#${k}>`;
        const t0 = nowMs();
        await sdk.beta.sessions.events.send(sessionId, { events: [{ type: "user.message", content: [{ type: "text", text: `turn ${marker}` }] }] });
        let ttft = NaN;
        for (;;) {
          const next = await events.next();
          if (next.done === true) throw new Error(`the stream of ${sessionId} ended`);
          const type = next.value.type as string;
          if (Number.isNaN(ttft) && (type === "event_start" || type === "event_delta" || type === "agent.message")) ttft = nowMs() - t0;
          if (type === "session.error") errors++;
          if (type === "session.status_idle") break;
        }
        const turnMs = nowMs() - t0;
        if (measuring && Date.now() <= stopAt) turnsInWindow++;
        if (measuring && Date.now() <= stopAt && k > 1) done.push({ ttftMs: ttft, turnMs, overheadMs: ttft - modelTtft(marker) });
      }
    } finally {
      stream.controller.abort();
    }
  };
  const loadBefore = os.loadavg()[0] ?? NaN;
  const workers = Array.from({ length: point.sessions }, () => worker());
  await new Promise((r) => setTimeout(r, phase.warmupSeconds * 1000));
  const countsBefore = (await probe?.()) ?? {};
  const before = stack.ticks();
  const [callsBefore, xactsBefore] = await Promise.all([stack.logCalls(), stack.logTransactions()]);
  const started = Date.now();
  measuring = true;
  stopAt = started + phase.seconds * 1000;
  await new Promise((r) => setTimeout(r, phase.seconds * 1000));
  const after = stack.ticks();
  const countsAfter = (await probe?.()) ?? {};
  const [callsAfter, xactsAfter] = await Promise.all([stack.logCalls(), stack.logTransactions()]);
  await Promise.all(workers);
  const seconds = phase.seconds;
  const turns = done.length;
  const cpuPercent: Record<string, number> = {};
  const cpuMsPerTurn: Record<string, number> = {};
  for (const [k, ticks] of Object.entries(ticksBetween(before, after))) {
    const cpuMs = (ticks / TICKS_PER_SECOND) * 1000;
    cpuPercent[k] = (cpuMs / (seconds * 1000)) * 100;
    cpuMsPerTurn[k] = cpuMs / Math.max(1, turnsInWindow);
  }
  return {
    ...point,
    modelTtftMs: MODEL_TTFT_MS,
    seconds,
    turns,
    errors,
    turnsPerSecond: turnsInWindow / seconds,
    ttftMs: summarize(done.map((t) => t.ttftMs).filter((x) => !Number.isNaN(x))),
    overheadMs: summarize(done.map((t) => t.overheadMs).filter((x) => !Number.isNaN(x))),
    turnMs: summarize(done.map((t) => t.turnMs)),
    cpuPercent,
    cpuMsPerTurn,
    load: [loadBefore, os.loadavg()[0] ?? NaN],
    countsPerTurn: perTurn(countsBefore, countsAfter, turnsInWindow),
    callsPerTurn: perTurn(callsBefore, callsAfter, turnsInWindow),
    transactionsPerTurn: (xactsAfter - xactsBefore) / Math.max(1, turnsInWindow),
  };
}

const harnessKeys = (f: PointFigures): string[] => Object.keys(f.cpuPercent).filter((k) => k.startsWith("harness-"));
const pct = (x: number | undefined): string => (x === undefined || !Number.isFinite(x) ? "-" : `${Math.round(x)}%`);
const triple = (s: Summary): string => `${ms(s.p50)} / ${ms(s.p95)} / ${ms(s.p99)}`;

/** The busiest service process and its share of one core (a Node process saturates at 100%). */
function busiest(f: PointFigures): string {
  const services = ["sessionLog", "gateway", ...harnessKeys(f)];
  const top = services.map((k) => [k, f.cpuPercent[k] ?? 0] as const).sort((a, b) => b[1] - a[1])[0];
  return top === undefined ? "-" : `${top[0]} ${pct(top[1])}`;
}

export function scaleTables(figs: readonly PointFigures[], phase: { warmupSeconds: number; seconds: number }): Table[] {
  const params = `model TTFT ${MODEL_TTFT_MS} ms, text-only turns through the SDK, closed loop, ${phase.seconds} s after ${phase.warmupSeconds} s warm-up`;
  return [
    {
      title: `turns/s and TTFT by harness processes and sessions (${params})`,
      columns: ["harness procs", "sessions", "linger ms", "model TTFT ms", "turns", "errors", "turns/s", "TTFT p50 / p95 / p99 ms", "platform's share p50 / p95 / p99 ms", "turn p50 / p95 / p99 ms", "load 1m before-after"],
      rows: figs.map((f) => [f.harnesses, f.sessions, lingerOf(f), f.modelTtftMs, f.turns, f.errors, f.turnsPerSecond.toFixed(1), triple(f.ttftMs), triple(f.overheadMs), triple(f.turnMs), `${f.load[0].toFixed(1)}-${f.load[1].toFixed(1)}`]),
    },
    {
      title: `CPU by process over the window, percent of one core (machine: ${os.cpus().length * 100}%), and ms per turn`,
      columns: ["harness procs", "sessions", "linger ms", "machine", "session log", "gateway", "each harness", "postgres", "kafka", "bench (SDK clients, model)", "busiest service", "services ms/turn", "load 1m before-after"],
      rows: figs.map((f) => {
        const services = ["sessionLog", "gateway", "postgres", "kafka", ...harnessKeys(f)].reduce((n, k) => n + (f.cpuMsPerTurn[k] ?? 0), 0);
        return [
          f.harnesses,
          f.sessions,
          lingerOf(f),
          pct(f.cpuPercent["machine"]),
          pct(f.cpuPercent["sessionLog"]),
          pct(f.cpuPercent["gateway"]),
          harnessKeys(f).map((k) => pct(f.cpuPercent[k])).join(" "),
          pct(f.cpuPercent["postgres"]),
          pct(f.cpuPercent["kafka"]),
          pct(f.cpuPercent["bench"]),
          busiest(f),
          ms(services),
          `${f.load[0].toFixed(1)}-${f.load[1].toFixed(1)}`,
        ];
      }),
    },
    {
      title: "per turn, counted (independent of the machine's load): the session log's gRPC calls served by method, and Postgres transactions in its database",
      columns: ["harness procs", "sessions", "linger ms", "calls / turn", "by method", "Postgres transactions / turn", "load 1m before-after"],
      rows: figs.map((f) => [
        f.harnesses,
        f.sessions,
        lingerOf(f),
        sumOf(f.callsPerTurn).toFixed(2),
        Object.entries(f.callsPerTurn)
          .sort((a, b) => b[1] - a[1])
          .map(([m, n]) => `${m} ${n.toFixed(2)}`)
          .join(", "),
        f.transactionsPerTurn.toFixed(2),
        `${f.load[0].toFixed(1)}-${f.load[1].toFixed(1)}`,
      ]),
    },
  ];
}

const lingerOf = (f: PointFigures): string => (f.lingerMs === undefined ? "default" : String(f.lingerMs));
const sumOf = (counts: Record<string, number>): number => Object.values(counts).reduce((a, b) => a + b, 0);

async function run(): Promise<BenchReport> {
  const base = process.argv.includes("--quick") ? QUICK : FULL;
  const phase = { ...base, harnesses: numbersFlag("harnesses") ?? base.harnesses, sessions: numbersFlag("sessions") ?? base.sessions };
  const scenarios = [defineScenario(SCENARIO, [{ text: EVENT_TEXT, ttftMs: MODEL_TTFT_MS, tokensPerSecond: 0 }], { onExhausted: "repeat-last" })];
  const figs: PointFigures[] = [];
  const lingers: Array<number | undefined> = numbersFlag("linger") ?? [undefined];
  const pairs = numbersFlag("pairs")?.[0] ?? 1;
  for (let pair = 0; pair < pairs; pair++) {
    for (const harnesses of phase.harnesses) {
      for (const lingerMs of lingers) {
        const harnessEnv: Record<string, string> = lingerMs === undefined ? {} : { MH_IDLE_LINGER_MS: String(lingerMs) };
        const stack = await startScaleStack({ scenarios, harnesses, gateway: true, kafkaWake: true, harnessEnv });
        try {
          for (const sessions of phase.sessions) {
            const f = await measure(stack, { harnesses, sessions, lingerMs }, phase);
            console.log(
              `  ${harnesses} harness processes, ${sessions} sessions, linger ${lingerOf(f)}: ${f.turnsPerSecond.toFixed(1)} turns/s, share p50 ${ms(f.overheadMs.p50)} ms, ` +
                `${sumOf(f.callsPerTurn).toFixed(1)} log calls and ${f.transactionsPerTurn.toFixed(1)} transactions per turn, busiest ${busiest(f)}, load ${f.load[0].toFixed(1)}`,
            );
            figs.push(f);
          }
        } finally {
          await stack.stop();
        }
      }
    }
  }
  return {
    name: "harness-scale",
    title: "turns/s and TTFT over 1, 2 and 4 harness processes, through the SDK",
    tables: scaleTables(figs, phase),
    checks: [],
    notes: [
      "every service its own process (session log, gateway, each harness) on the shared Postgres and Kafka; the offline model and the SDK clients run in the bench process (its CPU is the bench column)",
      "sessions reach a harness through the Kafka wake group only (12 partitions; the gateway's Wake RPC is refused at once, see scale-stack.ts), so a turn's wake waits for the outbox relay's publish and the group's consume",
      "TTFT is the SDK's send of the user.message to the first token preview frame (event_start) on the session's stream, opened beforehand; the platform's share subtracts the offline model's own TTFT (its receipt of the request to its first delta written) of that request",
      "postgres: the backends of the session log's and the gateway's databases and the server's shared processes, by pid (one that exits in the window is missed, not subtracted); other databases' backends (other work on the machine) are not counted; kafka: the java processes alive at both ends of the window",
      "a Node process saturates at 100% of one core; the machine at 100% per core, shared with other work (the load column)",
    ],
    data: { phase, figs },
  };
}

export const harnessScaleBench: Bench = { name: "harness-scale", title: "turns/s and TTFT over 1, 2 and 4 harness processes, through the SDK", run };

runIfMain(harnessScaleBench, import.meta.url);
