/**
 * The real session-log service for a benchmark, on a fresh database of the real Postgres and a
 * fresh topic of the real Kafka, reached through real gRPC, with the realistic event the
 * benchmarks append. By default the service runs as its own process, started from its built
 * dist/main.js the way a deployment starts it, so the benchmark process is only the client (a
 * harness is another process too) and the two do not share an event loop, a heap or a GC.
 * `inProcess` starts it inside the benchmark process instead (test/support/session-log.ts), for
 * benchmarks that need a second replica. Stopping also deletes the run's database and Kafka topic.
 */
import { randomBytes } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import type { Event } from "@metaharness/proto";
import { SessionLogClient, SessionLogService } from "@metaharness/proto";
import { createClient, promisify } from "@metaharness/service-kit/grpc";
import { loadConfig, type SessionLogConfig } from "@metaharness/session-log";
import { agentMessage } from "../../support/events.js";
import { createTestDatabase } from "../../support/postgres.js";
import { startProcess } from "../../support/process.js";
import { startTestLog, type LogClient, type TestLog } from "../../support/session-log.js";
import { writeServiceTokens } from "../../support/service-tokens.js";
import { deleteTopic, KAFKA_BROKERS } from "../../support/topics.js";
import { HEALTH_CHECK } from "./health-method.js";

/** ~200 characters of text: the size of a short agent message, used by every benchmark. */
export const EVENT_TEXT =
  "I read the failing test and the stack trace points at the retry loop in the client: the backoff " +
  "never resets after a success. I will patch it, add a regression test and run the suite again.";

export function benchEvent(): Event {
  return agentMessage(EVENT_TEXT);
}

export interface BenchLog {
  readonly dbUrl: string;
  readonly topic: string;
  /** The service's settings (its defaults plus the benchmark's environment). */
  readonly config: SessionLogConfig;
  /** host:port of its gRPC server (plaintext). */
  readonly address: string;
  readonly client: LogClient;
  /** The admin token `client` presents, for other clients of the same service (e.g. lib/ghz.ts). */
  readonly bearerToken: string;
  /** The service's process id when it runs as its own process. */
  readonly pid: number | undefined;
  /** The in-process service, when started with `inProcess`. */
  readonly inProcess: TestLog | undefined;
  /** What the service's process wrote so far ("" in-process). */
  output(): string;
  newSessions(count: number): Promise<string[]>;
  /** One grpc.health.v1 Check on the service's server: the floor any unary call pays. */
  healthCheck(): Promise<void>;
  stop(): Promise<void>;
}

export interface BenchLogOptions {
  readonly env?: Record<string, string>;
  /** Flags for the service's node process (e.g. --cpu-prof to see where its time goes). */
  readonly nodeArgs?: readonly string[];
  readonly inProcess?: boolean;
}

export async function startBenchLog(opts: BenchLogOptions = {}): Promise<BenchLog> {
  const env = opts.env ?? {};
  return opts.inProcess === true ? inProcessLog(env) : processLog(env, opts.nodeArgs ?? []);
}

async function inProcessLog(env: Record<string, string>): Promise<BenchLog> {
  const log = await startTestLog(env);
  return benchLog({
    dbUrl: log.db.url,
    topic: log.topic,
    config: log.config,
    address: `127.0.0.1:${log.handle.port}`,
    client: log.client,
    bearerToken: log.tokens.tokens.admin,
    pid: undefined,
    inProcess: log,
    output: () => "",
    stop: () => log.stop(),
  });
}

async function processLog(env: Record<string, string>, nodeArgs: readonly string[]): Promise<BenchLog> {
  const db = await createTestDatabase();
  const topic = `mh-bench-events-${randomBytes(4).toString("hex")}`;
  const tokens = await writeServiceTokens(["admin"] as const);
  const serviceEnv: Record<string, string> = {
    MH_SERVICE_TOKENS_FILE: tokens.file,
    MH_DATABASE_URL: db.url,
    MH_KAFKA_BROKERS: KAFKA_BROKERS,
    MH_KAFKA_TOPIC: topic,
    MH_KAFKA_TOPIC_PARTITIONS: "3",
    MH_RELAY_POLL_MS: "200",
    MH_LOG_LEVEL: "warn",
    ...env,
  };
  try {
    // Serving once health answers: the server starts listening after the migrations.
    const service = await startProcess("session-log", serviceEnv, async (port) => {
      const health = healthClient(`127.0.0.1:${port}`);
      try {
        await health.check();
      } finally {
        health.close();
      }
    }, nodeArgs);
    const client = createClient(SessionLogClient, `127.0.0.1:${service.port}`, { bearerToken: tokens.tokens.admin });
    return benchLog({
      dbUrl: db.url,
      topic,
      config: loadConfig({ ...serviceEnv, MH_GRPC_PORT: String(service.port) }),
      address: `127.0.0.1:${service.port}`,
      client: promisify(client, SessionLogService),
      bearerToken: tokens.tokens.admin,
      pid: service.child.pid,
      inProcess: undefined,
      output: () => service.output(),
      async stop() {
        client.close();
        await service.kill("SIGTERM");
        await db.drop();
        await deleteTopic(topic);
        await tokens.dispose();
      },
    });
  } catch (err) {
    await db.drop();
    await tokens.dispose();
    throw err;
  }
}

interface Parts {
  readonly dbUrl: string;
  readonly topic: string;
  readonly config: SessionLogConfig;
  readonly address: string;
  readonly client: LogClient;
  readonly bearerToken: string;
  readonly pid: number | undefined;
  readonly inProcess: TestLog | undefined;
  output(): string;
  stop(): Promise<void>;
}

function benchLog(p: Parts): BenchLog {
  const health = healthClient(p.address);
  return {
    ...p,
    async newSessions(count) {
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const { session } = await p.client.createSession({ sessionId: "", metadata: undefined });
        if (session === undefined) throw new Error("CreateSession returned no session");
        ids.push(session.sessionId);
      }
      return ids;
    },
    healthCheck: () => health.check(),
    async stop() {
      health.close();
      await p.stop();
    },
  };
}

/** grpc.health.v1.Health/Check with an empty request (service ""), its answer left undecoded. */
export function healthClient(address: string): { check(): Promise<void>; close(): void } {
  const identity = (b: Buffer): Buffer => b;
  const Ctor = grpc.makeGenericClientConstructor(HEALTH_CHECK, "Health");
  const client = new Ctor(address, grpc.credentials.createInsecure());
  const empty = Buffer.alloc(0);
  return {
    check: () =>
      new Promise<void>((resolve, reject) => {
        client.makeUnaryRequest("/grpc.health.v1.Health/Check", identity, identity, empty, (err) =>
          err ? reject(err) : resolve(),
        );
      }),
    close: () => client.close(),
  };
}
