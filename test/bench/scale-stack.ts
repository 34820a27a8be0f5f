/**
 * The processes of the scale benchmarks (harness-scale.ts, brain-reach.ts): the session log and
 * `harnesses` harness processes (their built dist/main.js, as deployed) on the real Postgres and
 * Kafka, and optionally the gateway as a process too, with the offline model in this process.
 * With `kafkaWake`, the harnesses consume the session-events topic as one wake group and sessions
 * spread over them by partition; the gateway's Wake RPC is then pointed at a port nothing listens
 * on (refused at once), so the wake group alone decides which process drives a session: a gateway
 * holds one connection to one harness address, which would otherwise put every session on one.
 * CPU of each process is read from /proc/<pid>/stat, as turn-cpu.ts does.
 */
import { readFileSync } from "node:fs";
import type Anthropic from "@anthropic-ai/sdk";
import type { Scenario } from "@metaharness/offline-model";
import { startOfflineModel, type OfflineModel } from "@metaharness/offline-model";
import { HarnessClient, HarnessService, SessionLogClient, SessionLogService } from "@metaharness/proto";
import { createClient, promisify, type PromiseClient } from "@metaharness/service-kit/grpc";
import { eventually } from "../support/eventually.js";
import { createTestDatabase, type TestDatabase } from "../support/postgres.js";
import { startGatewayProcess, type GatewayProcess } from "./gateway-process.js";
import { startProcess, unusedPort, type ServiceProcess } from "../support/process.js";
import { writeServiceTokens } from "../support/service-tokens.js";
import { deleteTopic, describeGroup, KAFKA_BROKERS } from "../support/topics.js";
import { busyTicks, javaTicks, postgresTicksOf, processTicks, ticksOfBoth, ticksSince } from "./lib/cpu.js";
import { databaseTransactions, rpcCallCounts } from "./lib/counts.js";

/** Partitions of the session-events topic: several per harness process, so the group spreads sessions evenly enough. */
const PARTITIONS = 12;

export interface ScaleStack {
  readonly model: OfflineModel;
  readonly log: ServiceProcess;
  readonly harnesses: readonly ServiceProcess[];
  readonly gateway: ServiceProcess | undefined;
  readonly logClient: PromiseClient<typeof SessionLogService>;
  /** The session log's admin token, for clients of the bench's own. */
  readonly logAdminToken: string;
  /** The first harness's Wake (for benches without the wake group). */
  readonly harnessClient: PromiseClient<typeof HarnessService>;
  /** The SDK as a user builds it (apiKey and baseURL), on the gateway; throws without one. */
  sdk(): Anthropic;
  /** CPU ticks since start: the stack's own processes by name, and Postgres's and Kafka's by pid (compare two with `ticksBetween`). */
  ticks(): TickSample;
  /** The gRPC calls the session log served since it started, by method (its metrics, lib/counts.ts). */
  logCalls(): Promise<Record<string, number>>;
  /** The transactions Postgres ran in the session log's database (each autocommit statement is one). */
  logTransactions(): Promise<number>;
  stop(): Promise<void>;
}

/** A sample of CPU ticks since start: session log, harness-1..n, gateway, bench, machine by name; Postgres and Kafka by pid. */
export interface TickSample {
  readonly own: Readonly<Record<string, number>>;
  /** The backends of the stack's databases and the server's shared processes (lib/cpu.ts postgresTicksOf). */
  readonly postgres: ReadonlyMap<string, number>;
  readonly kafka: ReadonlyMap<string, number>;
}

/**
 * Ticks used between two samples by process, postgres and kafka included: by pid, so a backend
 * or broker that exits in between is missed rather than subtracted (a sum over the processes
 * alive at each end could fall).
 */
export function ticksBetween(before: TickSample, after: TickSample): Record<string, number> {
  const used: Record<string, number> = { postgres: ticksSince(before.postgres, after.postgres), kafka: ticksOfBoth(before.kafka, after.kafka) };
  for (const [k, v] of Object.entries(after.own)) used[k] = v - (before.own[k] ?? 0);
  return used;
}

export interface ScaleStackOptions {
  readonly scenarios: Scenario[];
  readonly harnesses: number;
  readonly gateway: boolean;
  readonly kafkaWake: boolean;
  /** Extra node flags of the harness processes (e.g. --trace-gc). */
  readonly harnessNodeArgs?: readonly string[];
  readonly harnessEnv?: Record<string, string>;
  /** Extra node flags of the gateway process (e.g. --cpu-prof). */
  readonly gatewayNodeArgs?: readonly string[];
  /** The gateway's environment's additions (a log level other than errors only, say). */
  readonly gatewayEnv?: Record<string, string>;
}

function healthOf<S>(client: S, call: (s: S) => Promise<unknown>, close: () => void): Promise<unknown> {
  return call(client).finally(close);
}

export async function startScaleStack(opts: ScaleStackOptions): Promise<ScaleStack> {
  const stops: Array<() => Promise<unknown>> = [];
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  try {
    const logDb: TestDatabase = await createTestDatabase("mh_bench_scale_log");
    stops.push(() => logDb.drop());
    const topic = `mh-bench-scale-${Date.now().toString(36)}`;
    stops.push(() => deleteTopic(topic));
    const group = `${topic}-harness`;
    const logTokens = await writeServiceTokens(["admin", "harness"] as const);
    const harnessTokens = await writeServiceTokens(["admin"] as const);
    stops.push(() => logTokens.dispose(), () => harnessTokens.dispose());
    const model = await startOfflineModel({ scenarios: opts.scenarios });
    stops.push(() => model.close());
    const kafka = { MH_KAFKA_BROKERS: KAFKA_BROKERS, MH_KAFKA_TOPIC: topic, MH_KAFKA_TOPIC_PARTITIONS: String(PARTITIONS) };
    const logMetricsPort = await unusedPort();
    const log = await startProcess(
      "session-log",
      {
        MH_SERVICE_TOKENS_FILE: logTokens.file,
        MH_DATABASE_URL: logDb.url,
        ...kafka,
        MH_RELAY_ENABLED: String(opts.kafkaWake),
        MH_LOG_LEVEL: "warn",
        MH_METRICS_PORT: String(logMetricsPort),
      },
      (port) => {
        const c = createClient(SessionLogClient, `127.0.0.1:${port}`, { bearerToken: logTokens.tokens.admin });
        return healthOf(promisify(c, SessionLogService), (s) => s.getSession({ sessionId: "sesn_probe" }).catch((e: unknown) => {
          if (!(e instanceof Error && /not found|NOT_FOUND/i.test(e.message))) throw e;
        }), () => c.close());
      },
    );
    stops.push(() => log.kill("SIGTERM"));
    const harnesses: ServiceProcess[] = [];
    // Every harness alike but its instance id: the log's reach, the offline model, the wake group.
    const harnessEnv: Record<string, string> = {
      ...{ MH_SESSION_LOG_ADDR: `127.0.0.1:${log.port}`, MH_SESSION_LOG_TOKEN_FILE: logTokens.tokenFile.harness, MH_SERVICE_TOKENS_FILE: harnessTokens.file },
      ...{ MH_MODEL_BASE_URL: model.url, MH_MODEL: "claude-offline-test", MH_LOG_LEVEL: "warn" },
      ...(opts.kafkaWake ? { MH_KAFKA_WAKE: "true", ...kafka, MH_KAFKA_GROUP: group } : {}),
      ...opts.harnessEnv,
    };
    for (let i = 1; i <= opts.harnesses; i++) {
      const h = await startProcess(
        "harness",
        { MH_INSTANCE_ID: `harness-${i}`, ...harnessEnv },
        (port) => {
          const c = createClient(HarnessClient, `127.0.0.1:${port}`, { bearerToken: harnessTokens.tokens.admin });
          return healthOf(promisify(c, HarnessService), (s) => s.listActive({}, { deadlineMs: 2000 }), () => c.close());
        },
        opts.harnessNodeArgs ?? [],
      );
      harnesses.push(h);
      stops.push(() => h.kill("SIGTERM"));
    }
    if (opts.kafkaWake) {
      // Every process in the group, and the group settled, before anything is measured.
      let seen = "";
      await eventually(async () => {
        const g = await describeGroup(group);
        seen = `${g.state}, members ${g.clients.join(" ")}`;
        return g.state === "Stable" && g.clients.length === opts.harnesses ? true : undefined;
      }, () => `the ${opts.harnesses} harness processes to join the wake group ${group} (last seen: ${seen})`, 120_000);
    }
    let gateway: GatewayProcess | undefined;
    if (opts.gateway) {
      gateway = await startGatewayProcess({
        logAddress: `127.0.0.1:${log.port}`,
        logTokenFile: logTokens.tokenFile.admin,
        harnessAddress: opts.kafkaWake ? `127.0.0.1:${await unusedPort()}` : `127.0.0.1:${harnesses[0]!.port}`,
        harnessTokenFile: harnessTokens.tokenFile.admin,
        nodeArgs: opts.gatewayNodeArgs ?? [],
        // The refused Wake (see the header) is logged as a warning; errors only unless asked.
        env: { MH_LOG_LEVEL: "error", ...opts.gatewayEnv },
      });
      const started = gateway;
      stops.push(() => started.stop());
    }
    const rawLog = createClient(SessionLogClient, `127.0.0.1:${log.port}`, { bearerToken: logTokens.tokens.admin });
    const rawHarness = createClient(HarnessClient, `127.0.0.1:${harnesses[0]!.port}`, { bearerToken: harnessTokens.tokens.admin });
    stops.push(() => Promise.resolve(rawLog.close()), () => Promise.resolve(rawHarness.close()));
    const gw = gateway?.process;
    const gwProcess = gateway;
    // The gateway's database too when it runs: its statements are the turn's.
    const databases = gateway === undefined ? [logDb.name] : [logDb.name, gateway.db.name];
    return {
      model,
      log,
      harnesses,
      gateway: gw,
      logClient: promisify(rawLog, SessionLogService),
      logAdminToken: logTokens.tokens.admin,
      harnessClient: promisify(rawHarness, HarnessService),
      sdk() {
        if (gwProcess === undefined) throw new Error("this stack has no gateway");
        return gwProcess.sdk();
      },
      ticks() {
        const own = (p: ServiceProcess | undefined): number => (p?.child.pid === undefined ? 0 : (processTicks(String(p.child.pid))?.ticks ?? 0));
        const out: Record<string, number> = { sessionLog: own(log), gateway: own(gw), bench: processTicks(String(process.pid))?.ticks ?? 0, machine: busyTicks() };
        harnesses.forEach((h, i) => (out[`harness-${i + 1}`] = own(h)));
        return { own: out, postgres: postgresTicksOf(databases), kafka: javaTicks() };
      },
      logCalls: () => rpcCallCounts(`http://127.0.0.1:${logMetricsPort}/metrics`),
      logTransactions: () => databaseTransactions(logDb.name),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Resident memory of a process, from /proc/<pid>/status, in bytes (VmRSS and its anonymous part RssAnon). */
export function residentBytes(pid: number): { rss: number; anon: number } {
  const text = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN) * 1024;
  return { rss: kb("VmRSS"), anon: kb("RssAnon") };
}
