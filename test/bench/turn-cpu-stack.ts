/**
 * The services of the turn-cpu benchmark, each as deployed: the session log and the harness as
 * their own processes (built dist/main.js) on a fresh database of the real Postgres and a fresh
 * topic of the real Kafka, the offline model (one text-only scenario of a stated TTFT) in this
 * process, and the gRPC clients that drive them as a gateway and a UI would; with `gateway`, the
 * gateway too as a process of its own (gateway-process.ts, its Wake reaching the harness) with an
 * agent and an environment made for the SDK's sessions. `stop()` stops what was started, also
 * when the start failed half-way, so no service outlives its phase.
 */
import { defineScenario, startOfflineModel, type OfflineModel } from "@metaharness/offline-model";
import { HarnessClient, HarnessService, SessionLogClient, SessionLogService } from "@metaharness/proto";
import { createClient, promisify } from "@metaharness/service-kit/grpc";
import { createTestDatabase, type TestDatabase } from "../support/postgres.js";
import { startProcess, type ServiceProcess } from "../support/process.js";
import type { HarnessRpc } from "../support/harness.js";
import type { LogClient } from "../support/session-log.js";
import { writeServiceTokens } from "../support/service-tokens.js";
import { deleteTopic, KAFKA_BROKERS } from "../support/topics.js";
import { startGatewayProcess, type GatewayProcess } from "./gateway-process.js";
import { EVENT_TEXT } from "./lib/service.js";

/** The offline model's scenario of every turn: one text answer of the stated TTFT, again at every turn. */
export const SCENARIO = "turn-cpu";

export interface TurnStackOptions {
  readonly modelTtftMs: number;
  /** Flags for each service's node process (e.g. --cpu-prof), by service. */
  readonly nodeArgs?: (service: StackService) => readonly string[];
  /** Extra environment of every service process. */
  readonly env?: Record<string, string>;
  /** The gateway as a process too, for turns through the SDK. */
  readonly gateway?: boolean;
  /** Extra environment of one service's process, after `env`. */
  readonly serviceEnv?: (service: StackService) => Record<string, string>;
}

export type StackService = "session-log" | "harness" | "gateway";

/** The gateway of a stack driven through the SDK, and what its sessions are made of. */
export interface StackGateway extends GatewayProcess {
  readonly agentId: string;
  readonly environmentId: string;
}

export interface TurnStack {
  readonly db: TestDatabase;
  readonly model: OfflineModel;
  readonly log: ServiceProcess;
  readonly harness: ServiceProcess;
  readonly logClient: LogClient;
  readonly harnessClient: HarnessRpc;
  /** Undefined unless asked for (TurnStackOptions.gateway). */
  readonly gateway: StackGateway | undefined;
  stop(): Promise<void>;
}

export async function startTurnStack(opts: TurnStackOptions): Promise<TurnStack> {
  const args = opts.nodeArgs ?? (() => []);
  const envOf = opts.serviceEnv ?? (() => ({}));
  const stops: Array<() => Promise<unknown>> = [];
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  try {
    const db = await createTestDatabase();
    stops.push(() => db.drop());
    const topic = `mh-bench-turncpu-${Date.now().toString(36)}`;
    stops.push(() => deleteTopic(topic));
    const logTokens = await writeServiceTokens(["admin", "harness"] as const);
    stops.push(() => logTokens.dispose());
    const harnessTokens = await writeServiceTokens(["admin"] as const);
    stops.push(() => harnessTokens.dispose());
    const model = await startOfflineModel({ scenarios: [defineScenario(SCENARIO, [{ text: EVENT_TEXT, ttftMs: opts.modelTtftMs, tokensPerSecond: 0 }], { onExhausted: "repeat-last" })] });
    stops.push(() => model.close());
    const log = await startProcess(
      "session-log",
      { MH_SERVICE_TOKENS_FILE: logTokens.file, MH_DATABASE_URL: db.url, MH_KAFKA_BROKERS: KAFKA_BROKERS, MH_KAFKA_TOPIC: topic, MH_KAFKA_TOPIC_PARTITIONS: "3", MH_LOG_LEVEL: "warn", ...opts.env, ...envOf("session-log") },
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
      args("session-log"),
    );
    stops.push(() => log.kill("SIGTERM"));
    const harness = await startProcess(
      "harness",
      {
        MH_SESSION_LOG_ADDR: `127.0.0.1:${log.port}`,
        MH_SESSION_LOG_TOKEN_FILE: logTokens.tokenFile.harness,
        MH_SERVICE_TOKENS_FILE: harnessTokens.file,
        MH_MODEL_BASE_URL: model.url,
        MH_MODEL: "claude-offline-test",
        MH_LOG_LEVEL: "warn",
        ...opts.env,
        ...envOf("harness"),
      },
      async (port) => {
        const c = createClient(HarnessClient, `127.0.0.1:${port}`, { bearerToken: harnessTokens.tokens.admin });
        try {
          await promisify(c, HarnessService).listActive({}, { deadlineMs: 2000 });
        } finally {
          c.close();
        }
      },
      args("harness"),
    );
    // The harness stops before the log it appends to.
    stops.push(() => harness.kill("SIGTERM"));
    let gateway: StackGateway | undefined;
    if (opts.gateway === true) {
      const gw = await startGatewayProcess({
        logAddress: `127.0.0.1:${log.port}`,
        logTokenFile: logTokens.tokenFile.admin,
        harnessAddress: `127.0.0.1:${harness.port}`,
        harnessTokenFile: harnessTokens.tokenFile.admin,
        nodeArgs: args("gateway"),
        env: { MH_LOG_LEVEL: "warn", ...opts.env, ...envOf("gateway") },
      });
      stops.push(() => gw.stop());
      const sdk = gw.sdk();
      const environmentId = (await sdk.beta.environments.create({ name: "turn-cpu" })).id;
      // The offline model answers a request by the scenario its system prompt names.
      const agentId = (await sdk.beta.agents.create({ name: SCENARIO, model: "claude-sonnet-5-5", system: `[scenario:${SCENARIO}]`, tools: [] })).id;
      gateway = { ...gw, agentId, environmentId };
    }
    const rawLog = createClient(SessionLogClient, `127.0.0.1:${log.port}`, { bearerToken: logTokens.tokens.admin });
    const rawHarness = createClient(HarnessClient, `127.0.0.1:${harness.port}`, { bearerToken: harnessTokens.tokens.admin });
    stops.push(() => {
      rawLog.close();
      rawHarness.close();
      return Promise.resolve();
    });
    return {
      db,
      model,
      log,
      harness,
      logClient: promisify(rawLog, SessionLogService),
      harnessClient: promisify(rawHarness, HarnessService),
      gateway,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
