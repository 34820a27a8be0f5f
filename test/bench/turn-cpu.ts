/**
 * What a text-only turn costs, per service: the session log and the harness each as its own
 * process (their built dist/main.js, as deployed), on the real Postgres and Kafka, the offline
 * model (a stated TTFT) and the driving clients in this process. `concurrency` sessions in a
 * closed loop: each creates a session, appends a user.message, wakes the harness (as the gateway
 * does) and waits for session.status_idle while a watcher follows it with deltas (as a UI does).
 * CPU is read from /proc/<pid>/stat of each process over the measured window; CPU per turn is
 * that over the turns completed, and turns/s the machine's pace at that concurrency. The gateway
 * is not in it (the issue measured 13% of a turn's CPU there).
 */
import { readdirSync } from "node:fs";
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
import { busyTicks, processTicks, TICKS_PER_SECOND } from "./lib/cpu.js";
import { EVENT_TEXT } from "./lib/service.js";
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
  readonly load: readonly [number, number];
}

const SCENARIO = "turn-cpu";

function ticksOf(pids: readonly number[]): number {
  return pids.reduce((n, pid) => n + (processTicks(String(pid))?.ticks ?? 0), 0);
}

function allTicks(logPid: number, harnessPid: number): Record<string, number> {
  let postgres = 0;
  let kafka = 0;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    const p = processTicks(pid);
    if (p?.comm.startsWith("postgres") === true) postgres += p.ticks;
    else if (p?.comm === "java") kafka += p.ticks;
  }
  return { sessionLog: ticksOf([logPid]), harness: ticksOf([harnessPid]), postgres, kafka, benchProcess: ticksOf([process.pid]), machine: busyTicks() };
}

export async function measureTurnCpu(opts: { concurrency: number; modelTtftMs: number; warmupSeconds: number; seconds: number }): Promise<TurnCpuFigures> {
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
    );
    procs.push(harness);
    const rawLog = createClient(SessionLogClient, `127.0.0.1:${log.port}`, { bearerToken: logTokens.tokens.admin });
    const rawHarness = createClient(HarnessClient, `127.0.0.1:${harness.port}`, { bearerToken: harnessTokens.tokens.admin });
    closers.push(() => rawLog.close(), () => rawHarness.close());
    const logClient = promisify(rawLog, SessionLogService);
    const harnessClient = promisify(rawHarness, HarnessService);

    const turn = async (): Promise<number> => {
      const { session } = await logClient.createSession({ sessionId: "", metadata: undefined });
      const sessionId = session!.sessionId;
      const controller = new AbortController();
      const t0 = performance.now();
      const idle = (async () => {
        for await (const msg of logClient.watchEvents({ sessionId, afterSeq: 0, types: [], includeDeltas: true }, { signal: controller.signal })) {
          if (msg.event?.type === "session.status_idle") return performance.now() - t0;
        }
        throw new Error(`the watch of ${sessionId} ended before its turn did`);
      })();
      try {
        await logClient.emitEvent({ sessionId, event: userMessage(`[scenario:${SCENARIO}] ${sessionId}`) });
        await harnessClient.wake({ sessionId });
        return await idle;
      } finally {
        controller.abort();
        await idle.catch(() => undefined);
      }
    };
    const loadBefore = os.loadavg()[0] ?? NaN;
    let measuring = false;
    let stopAt = Number.POSITIVE_INFINITY;
    const durations: number[] = [];
    let turns = 0;
    const workers = Array.from({ length: opts.concurrency }, async () => {
      while (Date.now() < stopAt) {
        const ms = await turn();
        if (measuring && Date.now() <= stopAt) {
          durations.push(ms);
          turns += 1;
        }
      }
    });
    const warm = Date.now() + opts.warmupSeconds * 1000;
    await new Promise((r) => setTimeout(r, Math.max(0, warm - Date.now())));
    const before = allTicks(log.child.pid!, harness.child.pid!);
    const started = Date.now();
    measuring = true;
    stopAt = started + opts.seconds * 1000;
    await Promise.all(workers);
    const after = allTicks(log.child.pid!, harness.child.pid!);
    const seconds = (stopAt - started) / 1000;
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
      turnMs: summarize(durations),
      load: [loadBefore, os.loadavg()[0] ?? NaN],
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
