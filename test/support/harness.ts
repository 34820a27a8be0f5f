/**
 * A whole brain on real services: the session log (real Postgres), the offline model server
 * (the Messages API wire format, driven by scenarios) and harness instances, all in-process on
 * port 0. Instances can be added and stopped to test hand-over.
 */
import { HarnessClient, HarnessService, WakeOutcome, type AgentConfig, type EnvironmentConfig, type Event, type SessionMetadata } from "@metaharness/proto";
import { startHarness, loadConfig, type HarnessHandle } from "@metaharness/harness";
import { startOfflineModel, type OfflineModel, type Scenario } from "@metaharness/offline-model";
import { createClient, promisify, type PromiseClient } from "@metaharness/service-kit/grpc";
import { createLogger, type Logger } from "@metaharness/service-kit/logging";
import { startTestLog, type LogRole, type TestLog } from "./session-log.js";
import { writeServiceTokens, type ServiceTokenFiles } from "./service-tokens.js";
import { startTestBroker, type TestBroker } from "./sandbox-broker.js";
import { startProcess, type ServiceProcess } from "./process.js";
import { userMessage } from "./events.js";
import { eventually } from "./eventually.js";

export type HarnessRpc = PromiseClient<typeof HarnessService>;
export type HarnessOptions = NonNullable<Parameters<typeof startHarness>[2]>;

export interface Brain {
  readonly log: TestLog;
  /** The real sandbox broker (bubblewrap), when asked for. */
  readonly broker: TestBroker | undefined;
  readonly model: OfflineModel;
  readonly harnesses: HarnessHandle[];
  /** gRPC client of the first harness instance (an admin's). */
  readonly rpc: HarnessRpc;
  /** The harnesses' MH_SERVICE_TOKENS_FILE and the admin's token (the gateway's). */
  readonly harnessTokens: ServiceTokenFiles<"admin">;
  /** `options`: startHarness's (a wrapped client of the log, a loop of the test's). */
  addHarness(env?: Record<string, string>, options?: HarnessOptions): Promise<HarnessHandle>;
  /** `environment`: the snapshot the gateway would give the session (none when omitted). */
  createSession(agent?: Partial<AgentConfig>, harness?: string, environment?: EnvironmentConfig): Promise<string>;
  /** Events of the session, waiting until `until` holds for them (or `timeoutMs`). */
  waitFor(sessionId: string, until: (events: Event[]) => boolean, timeoutMs?: number): Promise<Event[]>;
  stop(): Promise<void>;
}

export async function startBrain(opts: {
  scenarios: Scenario[];
  /** The offline model's context window (its default otherwise: 200,000 tokens). */
  modelWindowTokens?: number;
  env?: Record<string, string>;
  logEnv?: Record<string, string>;
  /** The session log's tokens, made beforehand by a caller that names them to another service first. */
  logTokens?: ServiceTokenFiles<LogRole>;
  /**
   * A session log the caller started (on port 0) and stops itself, for stacks whose other
   * services must name its address before the brain starts (the credential proxy asks the log).
   */
  log?: TestLog;
  /**
   * Start a sandbox broker that reports to this log, and point the harness at it; an object: the
   * broker's settings besides (e.g. its credential vault proxy, for git remotes and egress).
   */
  broker?: boolean | Record<string, string>;
  /** The services' loggers, instead of the default (tests that scan log lines pass capturing ones). */
  logger?: (service: string) => Logger;
}): Promise<Brain> {
  const logger = (service: string) => opts.logger?.(service);
  const log =
    opts.log ??
    (await startTestLog(
      { MH_RELAY_ENABLED: "false", ...opts.logEnv },
      { logger: logger("session-log"), ...(opts.logTokens === undefined ? {} : { tokens: opts.logTokens }) },
    ));
  const stops: Array<() => Promise<void>> = opts.log === undefined ? [() => log.stop()] : [];
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  try {
    const model = await startOfflineModel({
      scenarios: opts.scenarios,
      ...(opts.modelWindowTokens === undefined ? {} : { windowTokens: opts.modelWindowTokens }),
    });
    stops.push(() => model.close());
    const harnessTokens = await writeServiceTokens(["admin"] as const);
    stops.push(() => harnessTokens.dispose());
    let broker: TestBroker | undefined;
    if (opts.broker !== undefined && opts.broker !== false) {
      broker = await startTestBroker({ ...log.reach("broker"), ...(opts.broker === true ? {} : opts.broker) }, {}, logger("sandbox-broker"));
      stops.push(() => broker!.stop());
    }
    const harnesses: HarnessHandle[] = [];
    const addHarness = async (env: Record<string, string> = {}, options: HarnessOptions = {}): Promise<HarnessHandle> => {
      const config = loadConfig({
        MH_GRPC_PORT: "0",
        ...log.reach("harness"),
        MH_SERVICE_TOKENS_FILE: harnessTokens.file,
        MH_MODEL_BASE_URL: model.url,
        MH_MODEL: "claude-offline-test",
        MH_MODEL_RETRY_INITIAL_MS: "20",
        ...(broker === undefined ? {} : { MH_SANDBOX_BROKER_ADDR: broker.address, MH_SANDBOX_BROKER_TOKEN_FILE: broker.tokens.tokenFile.harness }),
        MH_LOG_LEVEL: process.env["MH_TEST_LOG_LEVEL"] ?? "silent",
        ...opts.env,
        ...env,
      });
      const h = await startHarness(config, logger("harness") ?? createLogger({ service: "harness", level: config.logLevel }), options);
      harnesses.push(h);
      stops.push(() => h.stop());
      return h;
    };
    const first = await addHarness();
    const raw = createClient(HarnessClient, `127.0.0.1:${first.port}`, { bearerToken: harnessTokens.tokens.admin });
    stops.push(() => Promise.resolve(raw.close()));
    return {
      log,
      broker,
      model,
      harnesses,
      rpc: promisify(raw, HarnessService),
      harnessTokens,
      addHarness,
      async createSession(agent = {}, harness = "", environment = undefined) {
        const metadata: SessionMetadata = { workspaceFork: undefined,
          agentId: "agent_test",
          agentVersion: 1,
          tenant: "",
          labels: {},
          harness,
          environmentId: "",
          vaultIds: [],
          title: "",
          repositories: [],
          agent: {
            model: "",
            system: "",
            tools: [],
            tokenBudget: 0,
            contextStrategy: "",
            contextWindowTokens: 0,
            maxTokens: 0,
            explicitTools: false,
            listPrice: undefined,
            budget: undefined,
            ...agent,
          },
          environment,
        };
        const { session } = await log.client.createSession({ sessionId: "", metadata });
        return session!.sessionId;
      },
      // 40 s: a turn's few seconds on a quiet machine can take ten times that on a busy 2-core one.
      async waitFor(sessionId, until, timeoutMs = 40_000) {
        let seen: Event[] = [];
        return eventually(
          async () => {
            const { events } = await log.client.getEvents({ sessionId, position: undefined, limit: 1000, types: [] });
            seen = events;
            return until(events) ? events : undefined;
          },
          () => `the session's events; events so far:\n${seen.map((e) => `${e.seq} ${e.type}`).join("\n")}`,
          timeoutMs,
        );
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

export function idleReason(events: readonly Event[]): number | undefined {
  const last = [...events].reverse().find((e) => e.payload?.$case === "sessionStatusIdle");
  return last?.payload?.$case === "sessionStatusIdle" ? last.payload.value.stopReason?.type : undefined;
}

export function types(events: readonly Event[]): string[] {
  return events.map((e) => e.type);
}

/** A harness in its own process, to be killed mid-turn: see startDoomedHarness. */
export interface DoomedHarness extends ServiceProcess {
  readonly rpc: HarnessRpc;
  /**
   * Makes this process drive a session from `newSession`: its lease is taken in this process's
   * name before `prompt` is appended, then the process is woken (the same holder takes its own
   * lease again). A session with input and no holder is an orphan that the brain's sweeper may
   * take first; once it did so under load five times running, and the sessions lost that way ran
   * their turns beside the test's (their MCP calls counted as its own).
   */
  own(newSession: () => Promise<string>, prompt: string): Promise<string>;
}

/** The lease own() takes for the doomed process until its Wake takes it again: long enough for a loaded machine's Wake. */
const OWN_LEASE_TTL_MS = 30_000;

/**
 * A harness as its own process (dist/main.js) on `brain`, instance "doomed", taking sessions only
 * when woken (its sweeper is off, and it takes no session the log says was freed), so that a test
 * can kill it with SIGKILL at a chosen moment.
 */
export async function startDoomedHarness(brain: Brain, env: Record<string, string> = {}): Promise<DoomedHarness> {
  const child = await startProcess(
    "harness",
    {
      ...brain.log.reach("harness"),
      MH_SERVICE_TOKENS_FILE: brain.harnessTokens.file,
      MH_MODEL_BASE_URL: brain.model.url,
      MH_MODEL: "claude-offline-test",
      MH_INSTANCE_ID: "doomed",
      MH_LOG_LEVEL: "warn",
      MH_SWEEP_MS: "600000",
      MH_WAKE_FREED: "false",
      ...env,
    },
    async (port) => {
      const raw = createClient(HarnessClient, `127.0.0.1:${port}`, { bearerToken: brain.harnessTokens.tokens.admin });
      try {
        await promisify(raw, HarnessService).listActive({}, { deadlineMs: 500 });
      } finally {
        raw.close();
      }
    },
  );
  const rpc = promisify(createClient(HarnessClient, `127.0.0.1:${child.port}`, { bearerToken: brain.harnessTokens.tokens.admin }), HarnessService);
  const instance = env["MH_INSTANCE_ID"] ?? "doomed";
  const own = async (newSession: () => Promise<string>, prompt: string): Promise<string> => {
    const sessionId = await newSession();
    await brain.log.client.acquireLease({ sessionId, holder: instance, ttlMs: OWN_LEASE_TTL_MS });
    await brain.log.client.emitEvent({ sessionId, event: userMessage(prompt) });
    const { outcome } = await rpc.wake({ sessionId });
    const holder = (await brain.log.client.getSession({ sessionId })).session?.lease?.holder;
    if (outcome !== WakeOutcome.WAKE_OUTCOME_STARTED || holder !== instance) {
      throw new Error(`${instance} did not take the session it was given: wake ${WakeOutcome[outcome]}, holder ${String(holder)}`);
    }
    return sessionId;
  };
  return Object.assign(child, { rpc, own });
}
