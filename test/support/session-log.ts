/**
 * Starts the real session-log service in-process on port 0, on a fresh database of the real
 * Postgres and (optionally) a fresh topic of the real Kafka, with a service token for each of its
 * roles, and gives a promise client to it (an admin's). `reach(role)` is what a service that calls
 * the log is configured with: its address and a token file of that role.
 */
import { randomBytes } from "node:crypto";
import { MhError } from "@metaharness/errors";
import { SessionLogClient, SessionLogService } from "@metaharness/proto";
import type { ChannelCredentials } from "@grpc/grpc-js";
import { createClient, loadGrpcTls, promisify, type PromiseClient } from "@metaharness/service-kit/grpc";
import { createLogger, type Logger } from "@metaharness/service-kit/logging";
import { loadConfig, startSessionLog, type SessionLogConfig, type SessionLogHandle } from "@metaharness/session-log";
import { createTestDatabase, type TestDatabase } from "./postgres.js";
import { writeServiceTokens, type ServiceTokenFiles } from "./service-tokens.js";
import { deleteTopic, KAFKA_BROKERS } from "./topics.js";

export type LogRole = "admin" | "harness" | "broker" | "proxy";
export const LOG_ROLES: readonly LogRole[] = ["admin", "harness", "broker", "proxy"];

/** A new session with no metadata, with the log's id or `sessionId`; returns its id. */
export async function newSession(client: LogClient, sessionId = ""): Promise<string> {
  const { session } = await client.createSession({ sessionId, metadata: undefined });
  if (session === undefined) throw new Error("CreateSession returned no session");
  return session.sessionId;
}

/** The MhError a call fails with; fails the test if the call succeeds. */
export async function rejection(p: Promise<unknown>): Promise<MhError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof MhError) return err;
    throw new Error(`expected an MhError, got ${String(err)}`);
  }
  throw new Error("expected the call to fail");
}


export type LogClient = PromiseClient<typeof SessionLogService>;

export interface TestLog {
  readonly db: TestDatabase;
  readonly config: SessionLogConfig;
  readonly handle: SessionLogHandle;
  /** An admin's client. */
  readonly client: LogClient;
  readonly topic: string;
  /** The log's MH_SERVICE_TOKENS_FILE and each role's token. */
  readonly tokens: ServiceTokenFiles<LogRole>;
  /** MH_SESSION_LOG_ADDR and MH_SESSION_LOG_TOKEN_FILE for a service calling the log as `role`. */
  reach(role: LogRole): Record<string, string>;
  /** A client presenting `who`'s token (a role's, none, or any token). */
  clientAs(who: LogRole | "none" | { token: string }): LogClient;
  /** Another instance on the same database (a second replica). */
  startReplica(env?: Record<string, string>): Promise<{ handle: SessionLogHandle; client: LogClient }>;
  stop(): Promise<void>;
}

export async function startTestLog(
  env: Record<string, string> = {},
  /** `tokens`: made by the caller beforehand (services that must name the log's token before it starts), and kept by it. */
  opts: { logger?: Logger; tokens?: ServiceTokenFiles<LogRole> } = {},
): Promise<TestLog> {
  const db = await createTestDatabase();
  const topic = `mh-test-events-${randomBytes(4).toString("hex")}`;
  const stops: Array<() => Promise<void>> = [() => db.drop(), () => deleteTopic(topic)];
  const given = opts.tokens;
  const tokens = given ?? (await writeServiceTokens(LOG_ROLES));
  if (given === undefined) stops.push(() => tokens.dispose());
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s();
  };
  const configFor = (extra: Record<string, string>): SessionLogConfig =>
    loadConfig({
      MH_DATABASE_URL: db.url,
      MH_GRPC_PORT: "0",
      MH_KAFKA_BROKERS: KAFKA_BROKERS,
      MH_KAFKA_TOPIC: topic,
      MH_KAFKA_TOPIC_PARTITIONS: "3",
      MH_RELAY_POLL_MS: "200",
      MH_LOG_LEVEL: process.env["MH_TEST_LOG_LEVEL"] ?? "silent",
      MH_SERVICE_TOKENS_FILE: tokens.file,
      ...env,
      ...extra,
    });
  const start = async (
    extra: Record<string, string>,
  ): Promise<{ handle: SessionLogHandle; client: LogClient; config: SessionLogConfig; credentials: ChannelCredentials }> => {
    const config = configFor(extra);
    const handle = await startSessionLog(config, opts.logger ?? createLogger({ service: "session-log", level: config.logLevel }));
    // The tests' clients speak whatever the log is set to (MH_GRPC_TLS_*), with its own certificate.
    const credentials = (await loadGrpcTls(config)).client;
    const raw = createClient(SessionLogClient, `127.0.0.1:${handle.port}`, { bearerToken: tokens.tokens.admin, credentials });
    stops.push(async () => {
      raw.close();
      await handle.stop();
    });
    return { handle, client: promisify(raw, SessionLogService), config, credentials };
  };
  try {
    const first = await start({});
    const address = `127.0.0.1:${first.handle.port}`;
    return {
      db,
      config: first.config,
      handle: first.handle,
      client: first.client,
      topic,
      tokens,
      reach: (role) => ({ MH_SESSION_LOG_ADDR: address, MH_SESSION_LOG_TOKEN_FILE: tokens.tokenFile[role] }),
      clientAs: (who) => {
        const token = who === "none" ? undefined : typeof who === "string" ? tokens.tokens[who] : who.token;
        const raw = createClient(SessionLogClient, address, {
          credentials: first.credentials,
          ...(token === undefined ? {} : { bearerToken: token }),
        });
        stops.push(() => Promise.resolve(raw.close()));
        return promisify(raw, SessionLogService);
      },
      startReplica: (extra = {}) => start(extra),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
