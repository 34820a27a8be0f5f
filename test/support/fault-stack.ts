/**
 * The distributed deployment for fault tests: the session log, the credential vault proxy, the
 * sandbox broker and N harnesses, each its own process from its built dist/main.js (plaintext gRPC,
 * service tokens), so that any of them can be killed with SIGKILL and started again on the port
 * its callers know. Postgres and Kafka are the shared test servers unless the test passes its own
 * (own-postgres.ts, own-kafka.ts) to stop and restart them. The offline model runs in the test
 * process (scenarios are functions) and is never killed.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { newMasterKeyText } from "@metaharness/credential-vault-proxy";
import { defineScenario, startOfflineModel, type OfflineModel, type Scenario } from "@metaharness/offline-model";
import {
  CredentialVaultProxyClient,
  CredentialVaultProxyService,
  SandboxBrokerClient,
  SandboxBrokerService,
  SessionLogClient,
  SessionLogService,
  type Event,
  type SessionMetadata,
} from "@metaharness/proto";
import { createClient, promisify, type PromiseClient } from "@metaharness/service-kit/grpc";
import pg from "pg";
import { eventually } from "./eventually.js";
import { userMessage } from "./events.js";
import { metadataWithVaults } from "./vault.js";
import { countEvents, openToolUses } from "./whole-session.js";
import { createTestDatabase } from "./postgres.js";
import { listeningPorts, startProcess, type ServiceProcess } from "./process.js";
import { writeServiceTokens } from "./service-tokens.js";
import { deleteTopic, KAFKA_BROKERS } from "./topics.js";
import type { OwnPostgres } from "./own-postgres.js";

/** One service of the stack: a process that can be killed and started again on the same port. */
export interface StackService {
  readonly name: string;
  /** The port its first life bound (port 0, read back), which later lives bind again. */
  readonly port: number;
  readonly address: string;
  /** The process id of the life running now. */
  readonly pid: number | undefined;
  /** Whether a life of it is running now. */
  running(): boolean;
  /** SIGKILL by default; resolves once the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Another life on the same port, ready once its gRPC health check answers. */
  start(): Promise<void>;
  /** What every life wrote, for failure messages. */
  output(): string;
}

export interface FaultStack {
  readonly log: StackService;
  readonly proxy: StackService;
  readonly broker: StackService;
  readonly harnesses: StackService[];
  readonly model: OfflineModel;
  readonly logClient: PromiseClient<typeof SessionLogService>;
  readonly brokerClient: PromiseClient<typeof SandboxBrokerService>;
  readonly vaultAdmin: PromiseClient<typeof CredentialVaultProxyService>;
  /** The broker's database (its call ledger: sandbox_calls). */
  readonly brokerDbUrl: string;
  readonly topic: string;
  /** A session with `metadata` on top of an empty agent's; its id. */
  createSession(metadata?: Partial<SessionMetadata>): Promise<string>;
  /** Appends a user message (the sweeper or the Kafka wake starts the turn). */
  send(sessionId: string, text: string): Promise<void>;
  /** Every event of the session, in pages. */
  events(sessionId: string): Promise<Event[]>;
  /** Polls the events until `until` holds (or throws after `timeoutMs`, listing them). */
  waitFor(sessionId: string, until: (events: Event[]) => boolean, timeoutMs?: number): Promise<Event[]>;
  /** The last `tail` characters (4000) of every process's output, for a failure message. */
  outputs(tail?: number): string;
  /** How long each start of a service took until its health check answered, in order. */
  readonly starts: ReadonlyArray<{ readonly name: string; readonly ms: number }>;
  stop(): Promise<void>;
}

export interface FaultStackOptions {
  readonly scenarios: Scenario[];
  readonly harnesses?: number;
  /** A server of the test's own (to restart it); the shared one by default. */
  readonly postgres?: OwnPostgres;
  /** host:port of a Kafka of the test's own (to stop it); the shared one by default. */
  readonly kafkaBrokers?: string;
  /** Extra settings per service ("session-log", "credential-vault-proxy", "sandbox-broker", "harness"). */
  readonly env?: Partial<Record<"session-log" | "credential-vault-proxy" | "sandbox-broker" | "harness", Record<string, string>>>;
}

/** Scenario `name`: `steps` bash calls of `seconds` each (appending to a file), then an answer (again in later turns). */
export function toolSteps(name: string, steps: number, seconds: number): Scenario {
  return defineScenario(name, [
    ...Array.from({ length: steps }, (_, k) => ({ toolUses: [{ name: "bash", input: { command: `sleep ${seconds}; echo step-${k} >> runs` } }] })),
    { text: "all steps done" },
  ], { onExhausted: "repeat-last" });
}

/**
 * What toolSteps' commands left in a session's workspace: the `runs` file of each of its ready
 * sandboxes (read with a call of the test's own). A step's line is there at most once, in one
 * sandbox, if no call ran twice nor in a sandbox of its own; one cancelled with its harness
 * (killed mid-call) may be missing.
 */
export async function stepRuns(stack: FaultStack, sessionId: string): Promise<string[][]> {
  const { sandboxes } = await stack.brokerClient.listSandboxes({ sessionId, includeEnded: false });
  return Promise.all(
    sandboxes.map(async (s, i) => {
      const callId = `toolu_test_runs_${Date.now()}_${i}`;
      const res = await stack.brokerClient
        .execute({ sandboxId: s.sandboxId, sessionId, name: "bash", input: { command: "cat runs 2>/dev/null || true" }, callId, timeoutMs: 0, eventSeq: 0 })
        .catch((err: unknown) => {
          throw new Error(`reading ${s.sandboxId}'s runs: ${String(err)}\n${stack.broker.output().slice(-6000)}`, { cause: err });
        });
      return res.output.split("\n").filter((l) => l.startsWith("step-"));
    }),
  );
}

/**
 * Starts `count` sessions on `prompt` and returns once the first one is mid-tool (its first result
 * in, its next command running), with each session's event count at that moment. Its command is
 * claimed in the broker's call ledger, not only asked for in the log: between the tool use's
 * append and the harness's Execute there is a GetSession (the repositories), and a broker killed
 * in that gap never saw the call, which its successor then runs in full (a CI run at load killed
 * the broker there, and the "in flight" call ran its whole 120 s sleep after the restart).
 */
export async function turnsMidTool(stack: FaultStack, count: number, prompt: string): Promise<Map<string, number>> {
  const sessions = await Promise.all(Array.from({ length: count }, () => stack.createSession()));
  for (const id of sessions) await stack.send(id, prompt);
  const first = sessions[0]!;
  const events = await stack.waitFor(first, (e) => e.some((x) => x.type === "agent.tool_result") && openToolUses(e).length === 1, 30_000);
  const callId = openToolUses(events)[0]!;
  const db = new pg.Client({ connectionString: stack.brokerDbUrl });
  await db.connect();
  try {
    await eventually(async () => {
      const { rowCount } = await db.query("SELECT 1 FROM sandbox_calls WHERE session_id = $1 AND call_id = $2", [first, callId]);
      return rowCount === 0 ? undefined : true;
    }, `the broker to claim call ${callId} of session ${first}`, 30_000);
  } finally {
    await db.end();
  }
  return countEvents(stack, sessions);
}

const LEVEL = process.env["MH_TEST_LOG_LEVEL"] ?? "warn";

export async function startFaultStack(opts: FaultStackOptions): Promise<FaultStack> {
  const stops: Array<() => Promise<unknown>> = [];
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  const services: StackService[] = [];
  const starts: Array<{ name: string; ms: number }> = [];
  try {
    const database = async (prefix: string): Promise<string> => {
      if (opts.postgres !== undefined) return opts.postgres.createDatabase(`${prefix}_${randomBytes(4).toString("hex")}`);
      const db = await createTestDatabase(prefix);
      stops.push(() => db.drop());
      return db.url;
    };
    const [logDb, proxyDb, brokerDb] = [await database("mh_fault_log"), await database("mh_fault_vault"), await database("mh_fault_sbx")];
    const kafka = opts.kafkaBrokers ?? KAFKA_BROKERS;
    const topic = `mh-fault-${randomBytes(4).toString("hex")}`;
    if (opts.kafkaBrokers === undefined) stops.push(() => deleteTopic(topic));
    const dir = await mkdtemp(join(tmpdir(), "mh-fault-"));
    stops.push(() => rm(dir, { recursive: true, force: true }));
    const logTokens = await writeServiceTokens(["admin", "harness", "broker", "proxy"] as const);
    const brokerTokens = await writeServiceTokens(["admin", "harness"] as const);
    const proxyTokens = await writeServiceTokens(["admin", "harness", "broker"] as const);
    const harnessTokens = await writeServiceTokens(["admin"] as const);
    for (const t of [logTokens, brokerTokens, proxyTokens, harnessTokens]) stops.push(() => t.dispose());
    const masterKey = join(dir, "master.key");
    await writeFile(masterKey, newMasterKeyText(), { mode: 0o600 });
    const model = await startOfflineModel({ scenarios: opts.scenarios });
    stops.push(() => model.close());

    const at = (port: number) => `127.0.0.1:${port}`;
    const service = (name: string, app: string, env: () => Record<string, string>): StackService => {
      let life: ServiceProcess | undefined;
      let port: number | undefined;
      let out = "";
      const s: StackService = {
        name,
        get port() {
          if (port === undefined) throw new Error(`${name} has not started yet`);
          return port;
        },
        get address() {
          return at(s.port);
        },
        get pid() {
          return life?.child.pid;
        },
        running: () => life !== undefined && life.child.exitCode === null && life.child.signalCode === null,
        async kill(signal = "SIGKILL") {
          const l = life;
          if (l === undefined) return;
          await l.kill(signal);
          out += l.output();
          life = undefined;
        },
        async start() {
          if (s.running()) throw new Error(`${name} is running already`);
          const t0 = Date.now();
          life = await startProcess(app, { MH_LOG_LEVEL: LEVEL, ...env() }, (p) => healthCheck(at(p)), [], port);
          port = life.port;
          starts.push({ name, ms: Date.now() - t0 });
        },
        output: () => out + (life?.output() ?? ""),
      };
      services.push(s);
      stops.push(() => s.kill("SIGTERM"));
      return s;
    };

    const logReach = (role: "harness" | "broker" | "proxy") => ({ MH_SESSION_LOG_ADDR: log.address, MH_SESSION_LOG_TOKEN_FILE: logTokens.tokenFile[role] });
    const log = service("session-log", "session-log", () => ({
      MH_DATABASE_URL: logDb,
      MH_KAFKA_BROKERS: kafka,
      MH_KAFKA_TOPIC: topic,
      MH_KAFKA_TOPIC_PARTITIONS: "3",
      MH_RELAY_POLL_MS: "200",
      MH_SERVICE_TOKENS_FILE: logTokens.file,
      ...opts.env?.["session-log"],
    }));
    // Its git and egress endpoint (HTTP): port 0 at first, then the one it bound, which the broker's sandboxes know.
    let remotePort = 0;
    const proxy = service("credential-vault-proxy", "credential-vault-proxy", () => ({
      MH_DATABASE_URL: proxyDb,
      MH_REMOTE_HTTP_PORT: String(remotePort),
      ...logReach("proxy"),
      MH_MASTER_KEY_FILE: masterKey,
      MH_SERVICE_TOKENS_FILE: proxyTokens.file,
      MH_CREDENTIAL_PROXY_ALLOW_PRIVATE_NETWORKS: "true",
      ...opts.env?.["credential-vault-proxy"],
    }));
    const brokerId = `fault-${randomBytes(4).toString("hex")}`;
    const broker = service("sandbox-broker", "sandbox-broker", () => ({
      MH_DATABASE_URL: brokerDb,
      MH_BROKER_ID: brokerId,
      ...logReach("broker"),
      MH_CREDENTIAL_PROXY_ADDR: proxy.address,
      MH_CREDENTIAL_PROXY_TOKEN_FILE: proxyTokens.tokenFile.broker,
      MH_SERVICE_TOKENS_FILE: brokerTokens.file,
      ...opts.env?.["sandbox-broker"],
    }));
    const harnesses: StackService[] = [];
    for (let i = 1; i <= (opts.harnesses ?? 1); i++) {
      let lives = 0;
      harnesses.push(
        service(`harness-${i}`, "harness", () => ({
          // A new instance id for each life, as a deployment's replacement pod has.
          MH_INSTANCE_ID: `harness-${i}.${++lives}`,
          MH_SERVICE_TOKENS_FILE: harnessTokens.file,
          ...logReach("harness"),
          MH_MODEL_BASE_URL: model.url,
          MH_MODEL: "claude-offline-test",
          MH_MODEL_RETRY_INITIAL_MS: "50",
          MH_SANDBOX_BROKER_ADDR: broker.address,
          MH_SANDBOX_BROKER_TOKEN_FILE: brokerTokens.tokenFile.harness,
          MH_CREDENTIAL_PROXY_ADDR: proxy.address,
          MH_CREDENTIAL_PROXY_TOKEN_FILE: proxyTokens.tokenFile.harness,
          MH_KAFKA_WAKE: "true",
          MH_KAFKA_BROKERS: kafka,
          MH_KAFKA_TOPIC: topic,
          MH_KAFKA_TOPIC_PARTITIONS: "3",
          MH_KAFKA_GROUP: `${topic}-harness`,
          ...opts.env?.["harness"],
        })),
      );
    }
    await log.start();
    await proxy.start();
    remotePort = (await listeningPorts(proxy.pid!)).find((p) => p !== proxy.port) ?? 0;
    await broker.start();
    // One at a time: two JIT-compiling node processes at once on 2 cores double each other's start.
    for (const h of harnesses) await h.start();

    const logRaw = createClient(SessionLogClient, log.address, { bearerToken: logTokens.tokens.admin });
    const brokerRaw = createClient(SandboxBrokerClient, broker.address, { bearerToken: brokerTokens.tokens.admin });
    const proxyRaw = createClient(CredentialVaultProxyClient, proxy.address, { bearerToken: proxyTokens.tokens.admin });
    stops.push(() => Promise.resolve([logRaw, brokerRaw, proxyRaw].forEach((c) => c.close())));
    const logClient = promisify(logRaw, SessionLogService);
    const outputs = (tail = 4000) => services.map((s) => `--- ${s.name} ---\n${s.output().slice(-tail)}`).join("\n");
    const events = async (sessionId: string): Promise<Event[]> => {
      const all: Event[] = [];
      for (;;) {
        const after = all.at(-1)?.seq ?? 0;
        const page = await logClient.getEvents({ sessionId, position: { $case: "afterSeq", value: after }, limit: 1000, types: [] });
        all.push(...page.events);
        if (!page.hasMore || page.events.length === 0) return all;
      }
    };
    return {
      log,
      proxy,
      broker,
      harnesses,
      model,
      logClient,
      brokerClient: promisify(brokerRaw, SandboxBrokerService),
      vaultAdmin: promisify(proxyRaw, CredentialVaultProxyService),
      brokerDbUrl: brokerDb,
      topic,
      async createSession(metadata = {}) {
        const { session } = await logClient.createSession({
          sessionId: "",
          metadata: { ...metadataWithVaults([]), ...metadata },
        });
        return session!.sessionId;
      },
      async send(sessionId, text) {
        await logClient.emitEvent({ sessionId, event: userMessage(text) });
      },
      events,
      async waitFor(sessionId, until, timeoutMs = 30_000) {
        let last: Event[] = [];
        return eventually(
          async () => {
            const seen = await events(sessionId).catch(() => undefined);
            if (seen !== undefined) last = seen;
            return seen !== undefined && until(seen) ? seen : undefined;
          },
          () => `session ${sessionId}; events so far:\n${last.map((e) => `${e.seq} ${e.type}`).join("\n")}\n${outputs()}`,
          timeoutMs,
        );
      },
      starts,
      outputs,
      stop,
    };
  } catch (err) {
    const outputs = services.map((s) => `--- ${s.name} ---\n${s.output().slice(-3000)}`).join("\n");
    await stop();
    throw new Error(`${String(err)}\n${outputs}`, { cause: err });
  }
}

const identity = (b: Buffer): Buffer => b;

/** One grpc.health.v1 Check of the overall status (an empty request); rejects unless it answers in 1 s. */
export async function healthCheck(address: string): Promise<void> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  try {
    await new Promise<void>((resolve, reject) => {
      client.makeUnaryRequest("/grpc.health.v1.Health/Check", identity, identity, Buffer.alloc(0), new grpc.Metadata(), { deadline: Date.now() + 1000 }, (err) =>
        err ? reject(err) : resolve(),
      );
    });
  } finally {
    client.close();
  }
}
