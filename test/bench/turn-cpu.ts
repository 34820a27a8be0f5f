/**
 * What a text-only turn costs, per service: the session log and the harness each as its own
 * process (their built dist/main.js, as deployed), on the real Postgres and Kafka, the offline
 * model (a stated TTFT) and the driving clients in this process. `concurrency` sessions in a
 * closed loop: each creates a session, appends a user.message, wakes the harness (as the gateway
 * does) and waits for session.status_idle while a watcher follows it with deltas (as a UI does).
 * CPU is read from /proc/<pid>/stat of each process over the measured window; CPU per turn is
 * that over the turns completed, and turns/s the machine's pace at that concurrency. The gateway
 * is not in it (the issue measured 13% of a turn's CPU there). It is the TTFT sweep's last phase,
 * and `npm run bench -- turn-cpu` runs it alone at 1 and 16 sessions, with TTFT and the platform's
 * share (TTFT less the model's own) of each turn; `-- turn-cpu --cpu-prof` also writes each
 * service process's CPU profile into bench/results/.
 */
import { mkdirSync } from "node:fs";
import os from "node:os";
import { performance } from "node:perf_hooks";
import { defineScenario, startOfflineModel } from "@metaharness/offline-model";
import { HarnessClient, HarnessService, SessionLogClient, SessionLogService } from "@metaharness/proto";
import { createClient, promisify } from "@metaharness/service-kit/grpc";
import { userMessage } from "../support/events.js";
import { createTestDatabase } from "../support/postgres.js";
import { startProcess, type ServiceProcess } from "../support/process.js";
import { writeServiceTokens } from "../support/service-tokens.js";
import { deleteTopic, KAFKA_BROKERS } from "../support/topics.js";
import { busyTicks, postgresAndKafkaTicks, processTicks, TICKS_PER_SECOND } from "./lib/cpu.js";
import { EVENT_TEXT } from "./lib/service.js";
import { atMost, ms, runIfMain, type Bench, type Check, type Table } from "./lib/report.js";
import { summarize, type Summary } from "./lib/stats.js";

export interface TurnCpuFigures {
  readonly concurrency: number;
  readonly modelTtftMs: number;
  readonly seconds: number;
  readonly turns: number;
  readonly turnsPerSecond: number;
  /** ms of CPU per turn, by process. */
  readonly cpuMsPerTurn: Readonly<Record<"sessionLog" | "harness" | "postgres" | "kafka" | "benchProcess" | "machine", number>>;
  /** user.message sent -> status_idle seen by the waiting client, ms. */
  readonly turnMs: Summary;
  /** user.message sent -> first token delta at the watcher, ms. */
  readonly ttftMs: Summary;
  /** The platform's share: TTFT less the model's own (its receipt of the request to its first delta written), per turn, ms. */
  readonly overheadMs: Summary;
  readonly load: readonly [number, number];
  /** Where the platform's share went, ms per turn (wall clock, 1 ms resolution). */
  readonly segments: Readonly<Record<keyof Segments, Summary>>;
}

/**
 * The share's path, each a stretch of one turn: the client's EmitEvent(user.message) round trip;
 * its Wake round trip (the lease and the short log's read inside it); Wake's return to the
 * model's receipt of the request (the harness's context, the SDK, HTTP); the model's first delta
 * written to its arrival at the watcher (the harness, PublishDeltas, the log's fan-out).
 */
interface Segments {
  readonly emit: number;
  readonly wake: number;
  readonly toModel: number;
  readonly fromModel: number;
}

const SCENARIO = "turn-cpu";

/** The per-service CPU phase: the model's TTFT, and how long it warms up and measures. */
export const CPU_PHASE = { modelTtftMs: 200, warmupSeconds: 10, seconds: 30 };

/** Issue 31's targets: CPU per text-only turn across the services, the platform's share at 16 sessions. */
const TARGET = { cpuMs: 15, overheadP50: 5, overheadP95: 15, concurrency: 16 };

const servicesMs = (f: TurnCpuFigures): number => f.cpuMsPerTurn.sessionLog + f.cpuMsPerTurn.harness + f.cpuMsPerTurn.postgres + f.cpuMsPerTurn.kafka;
const pair = (s: Summary): string => `${ms(s.p50)} / ${ms(s.p95)}`;

export function turnCpuTable(figs: readonly TurnCpuFigures[], phase: { modelTtftMs: number; warmupSeconds: number; seconds: number }): Table {
  return {
    title: `CPU per text-only turn by process, ms (session log and harness each their own process; model TTFT ${phase.modelTtftMs} ms, closed loop, ${phase.seconds} s after ${phase.warmupSeconds} s warm-up)`,
    columns: ["sessions", "turns", "turns/s", "turn p50 / p95 ms", "TTFT p50 / p95 ms", "platform's share p50 / p95 / p99 ms", "session log", "harness", "postgres", "kafka", "bench process (model, clients)", "services total", "machine", "load 1m"],
    rows: figs.map((f) => [
      f.concurrency,
      f.turns,
      f.turnsPerSecond.toFixed(1),
      pair(f.turnMs),
      pair(f.ttftMs),
      `${pair(f.overheadMs)} / ${ms(f.overheadMs.p99)}`,
      ms(f.cpuMsPerTurn.sessionLog),
      ms(f.cpuMsPerTurn.harness),
      ms(f.cpuMsPerTurn.postgres),
      ms(f.cpuMsPerTurn.kafka),
      ms(f.cpuMsPerTurn.benchProcess),
      ms(servicesMs(f)),
      ms(f.cpuMsPerTurn.machine),
      `${f.load[0].toFixed(1)}-${f.load[1].toFixed(1)}`,
    ]),
  };
}

export function segmentTable(figs: readonly TurnCpuFigures[]): Table {
  const cell = (s: Summary): string => `${ms(s.p50)} / ${ms(s.p95)} / ${ms(s.p99)}`;
  return {
    title: "Where the platform's share went, p50 / p95 / p99 ms per turn (wall clock)",
    columns: ["sessions", "EmitEvent(user.message) round trip", "Wake round trip (lease, short log read)", "Wake returned -> request at the model", "model's first delta -> at the watcher"],
    rows: figs.map((f) => [f.concurrency, cell(f.segments.emit), cell(f.segments.wake), cell(f.segments.toModel), cell(f.segments.fromModel)]),
  };
}

export function turnCpuChecks(figs: readonly TurnCpuFigures[]): Check[] {
  return figs
    .filter((f) => f.concurrency === TARGET.concurrency)
    .flatMap((f) => [
      atMost(`CPU per text-only turn, session log + harness + postgres + kafka, ${f.concurrency} sessions`, servicesMs(f), TARGET.cpuMs, "ms"),
      atMost(`platform's share p50, text-only turns, services as processes, ${f.concurrency} sessions (n=${f.overheadMs.n})`, f.overheadMs.p50, TARGET.overheadP50, "ms"),
      atMost(`platform's share p95, text-only turns, services as processes, ${f.concurrency} sessions (n=${f.overheadMs.n})`, f.overheadMs.p95, TARGET.overheadP95, "ms"),
    ]);
}

function ticksOf(pids: readonly number[]): number {
  return pids.reduce((n, pid) => n + (processTicks(String(pid))?.ticks ?? 0), 0);
}

function allTicks(logPid: number, harnessPid: number): Record<string, number> {
  const { postgres, kafka } = postgresAndKafkaTicks();
  return { sessionLog: ticksOf([logPid]), harness: ticksOf([harnessPid]), postgres, kafka, benchProcess: ticksOf([process.pid]), machine: busyTicks() };
}

export interface TurnCpuOptions {
  readonly concurrency: number;
  readonly modelTtftMs: number;
  readonly warmupSeconds: number;
  readonly seconds: number;
  /** A directory for each service process's --cpu-prof profile (the whole run, warm-up included); none by default. */
  readonly cpuProfDir?: string;
}

export async function measureTurnCpu(opts: TurnCpuOptions): Promise<TurnCpuFigures> {
  const profArgs = (name: string): string[] => (opts.cpuProfDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${opts.cpuProfDir}`, `--cpu-prof-name=${name}-${opts.concurrency}.cpuprofile`]);
  const db = await createTestDatabase();
  const topic = `mh-bench-turncpu-${Date.now().toString(36)}`;
  const logTokens = await writeServiceTokens(["admin", "harness"] as const);
  const harnessTokens = await writeServiceTokens(["admin"] as const);
  const model = await startOfflineModel({ scenarios: [defineScenario(SCENARIO, [{ text: EVENT_TEXT, ttftMs: opts.modelTtftMs, tokensPerSecond: 0 }], { onExhausted: "repeat-last" })] });
  const procs: ServiceProcess[] = [];
  const closers: Array<() => void> = [];
  try {
    const log = await startProcess(
      "session-log",
      { MH_SERVICE_TOKENS_FILE: logTokens.file, MH_DATABASE_URL: db.url, MH_KAFKA_BROKERS: KAFKA_BROKERS, MH_KAFKA_TOPIC: topic, MH_KAFKA_TOPIC_PARTITIONS: "3", MH_LOG_LEVEL: "warn" },
      async (port) => {
        const c = createClient(SessionLogClient, `127.0.0.1:${port}`, { bearerToken: logTokens.tokens.admin });
        try {
          await promisify(c, SessionLogService).getSession({ sessionId: "sesn_probe" }).catch((e: unknown) => {
            if (!(e instanceof Error && /not found|NOT_FOUND/i.test(e.message))) throw e;
          });
        } finally {
          c.close();
        }
      },
      profArgs("session-log"),
    );
    procs.push(log);
    const harness = await startProcess(
      "harness",
      {
        MH_SESSION_LOG_ADDR: `127.0.0.1:${log.port}`,
        MH_SESSION_LOG_TOKEN_FILE: logTokens.tokenFile.harness,
        MH_SERVICE_TOKENS_FILE: harnessTokens.file,
        MH_MODEL_BASE_URL: model.url,
        MH_MODEL: "claude-offline-test",
        MH_LOG_LEVEL: "warn",
      },
      async (port) => {
        const c = createClient(HarnessClient, `127.0.0.1:${port}`, { bearerToken: harnessTokens.tokens.admin });
        try {
          await promisify(c, HarnessService).listActive({}, { deadlineMs: 2000 });
        } finally {
          c.close();
        }
      },
      profArgs("harness"),
    );
    procs.push(harness);
    const rawLog = createClient(SessionLogClient, `127.0.0.1:${log.port}`, { bearerToken: logTokens.tokens.admin });
    const rawHarness = createClient(HarnessClient, `127.0.0.1:${harness.port}`, { bearerToken: harnessTokens.tokens.admin });
    closers.push(() => rawLog.close(), () => rawHarness.close());
    const logClient = promisify(rawLog, SessionLogService);
    const harnessClient = promisify(rawHarness, HarnessService);

    interface Turn {
      readonly turnMs: number;
      readonly ttftMs: number;
      readonly overheadMs: number;
      readonly segments: Segments;
    }
    // The model's own TTFT of the request carrying this session's message (its text names the session).
    const modelRecord = (sessionId: string) => model.requests.find((r) => r.receivedAt !== undefined && JSON.stringify(r.body).includes(sessionId));
    const turn = async (): Promise<Turn> => {
      const { session } = await logClient.createSession({ sessionId: "", metadata: undefined });
      const sessionId = session!.sessionId;
      const controller = new AbortController();
      // Wall-clock stamps (Date.now), the clock the offline model records its request with.
      const t0 = performance.now();
      const w0 = Date.now();
      let ttft = NaN;
      let deltaAt = NaN;
      const idle = (async () => {
        for await (const msg of logClient.watchEvents({ sessionId, afterSeq: 0, types: [], includeDeltas: true }, { signal: controller.signal })) {
          if (msg.delta !== undefined && Number.isNaN(ttft)) {
            ttft = performance.now() - t0;
            deltaAt = Date.now();
          }
          if (msg.event?.type === "session.status_idle") return performance.now() - t0;
        }
        throw new Error(`the watch of ${sessionId} ended before its turn did`);
      })();
      try {
        await logClient.emitEvent({ sessionId, event: userMessage(`[scenario:${SCENARIO}] ${sessionId}`) });
        const emitted = Date.now();
        await harnessClient.wake({ sessionId });
        const woken = Date.now();
        const turnMs = await idle;
        const rec = modelRecord(sessionId);
        const modelTtft = rec?.firstDeltaAt === undefined ? NaN : rec.firstDeltaAt - rec.receivedAt;
        const segments: Segments = {
          emit: emitted - w0,
          wake: woken - emitted,
          toModel: (rec?.receivedAt ?? NaN) - woken,
          fromModel: deltaAt - (rec?.firstDeltaAt ?? NaN),
        };
        return { turnMs, ttftMs: ttft, overheadMs: ttft - modelTtft, segments };
      } finally {
        controller.abort();
        await idle.catch(() => undefined);
      }
    };
    const loadBefore = os.loadavg()[0] ?? NaN;
    let measuring = false;
    let stopAt = Number.POSITIVE_INFINITY;
    const done: Turn[] = [];
    // A worker's failure stops the others and is thrown after them, so that the finally below
    // stops the services: rejected during the warm-up, before anything awaited it, it ended the
    // bench process with its services left running.
    const failures: unknown[] = [];
    const workers = Array.from({ length: opts.concurrency }, async () => {
      try {
        while (Date.now() < stopAt) {
          const t = await turn();
          if (measuring && Date.now() <= stopAt) done.push(t);
        }
      } catch (err) {
        failures.push(err);
        stopAt = 0;
      }
    });
    const warm = Date.now() + opts.warmupSeconds * 1000;
    await new Promise((r) => setTimeout(r, Math.max(0, warm - Date.now())));
    const before = allTicks(log.child.pid!, harness.child.pid!);
    const started = Date.now();
    measuring = true;
    stopAt = started + opts.seconds * 1000;
    await Promise.all(workers);
    if (failures.length > 0) throw failures[0];
    const after = allTicks(log.child.pid!, harness.child.pid!);
    const seconds = (stopAt - started) / 1000;
    const turns = done.length;
    const perTurn = (k: string): number => (((after[k] ?? 0) - (before[k] ?? 0)) / TICKS_PER_SECOND) * 1000 / Math.max(1, turns);
    return {
      concurrency: opts.concurrency,
      modelTtftMs: opts.modelTtftMs,
      seconds,
      turns,
      turnsPerSecond: turns / seconds,
      cpuMsPerTurn: {
        sessionLog: perTurn("sessionLog"),
        harness: perTurn("harness"),
        postgres: perTurn("postgres"),
        kafka: perTurn("kafka"),
        benchProcess: perTurn("benchProcess"),
        machine: perTurn("machine"),
      },
      turnMs: summarize(done.map((t) => t.turnMs)),
      ttftMs: summarize(done.map((t) => t.ttftMs).filter((x) => !Number.isNaN(x))),
      overheadMs: summarize(done.map((t) => t.overheadMs).filter((x) => !Number.isNaN(x))),
      load: [loadBefore, os.loadavg()[0] ?? NaN],
      segments: {
        emit: summarize(done.map((t) => t.segments.emit)),
        wake: summarize(done.map((t) => t.segments.wake)),
        toModel: summarize(done.map((t) => t.segments.toModel).filter((x) => !Number.isNaN(x))),
        fromModel: summarize(done.map((t) => t.segments.fromModel).filter((x) => !Number.isNaN(x))),
      },
    };
  } finally {
    for (const close of closers) close();
    for (const p of procs.reverse()) await p.kill("SIGTERM").catch(() => undefined);
    await model.close();
    await db.drop().catch(() => undefined);
    await deleteTopic(topic).catch(() => undefined);
    await logTokens.dispose();
    await harnessTokens.dispose();
  }
}

export const turnCpuBench: Bench = {
  name: "turn-cpu",
  title: "CPU per text-only turn by process, TTFT and the platform's share, 1 and 16 sessions",
  run: async () => {
    const profile = process.argv.includes("--cpu-prof");
    const cpuProfDir = profile ? new URL("./results/cpu-prof/", import.meta.url).pathname : undefined;
    if (cpuProfDir !== undefined) mkdirSync(cpuProfDir, { recursive: true });
    const figs: TurnCpuFigures[] = [];
    for (const concurrency of [1, 16]) figs.push(await measureTurnCpu({ concurrency, ...CPU_PHASE, ...(cpuProfDir === undefined ? {} : { cpuProfDir }) }));
    return {
      name: "turn-cpu",
      title: turnCpuBench.title,
      tables: [turnCpuTable(figs, CPU_PHASE), segmentTable(figs)],
      checks: turnCpuChecks(figs),
      notes: [
        "TTFT is from the client's send of EmitEvent(user.message) through the Wake RPC (as the gateway does both) to the first token delta at a client that watched the session beforehand; the platform's share subtracts the offline model's own TTFT (its receipt of the request to its first delta written) per turn",
        ...(cpuProfDir === undefined ? [] : [`CPU profiles (the whole run, warm-up included): ${cpuProfDir}`]),
      ],
      data: { figs },
    };
  },
};

runIfMain(turnCpuBench, import.meta.url);
