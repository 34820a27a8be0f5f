/**
 * Starts the real sandbox broker (real bubblewrap, real cgroups, a fresh database of the real
 * Postgres) in-process on port 0, or as its own process for crash tests, with a service token for
 * each of its roles, and gives promise clients to it (by default an admin's, which may do what a
 * harness does for any session). Cleanup runs even when setup fails half-way.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { SandboxBrokerClient, SandboxBrokerService, type ExecuteResponse } from "@metaharness/proto";
import { createClient, loadGrpcTls, promisify, type PromiseClient } from "@metaharness/service-kit/grpc";
import { createLogger, type Logger } from "@metaharness/service-kit/logging";
import {
  loadConfig,
  startKvDevice,
  startSandboxBroker,
  type KvDeviceHandle,
  type SandboxBrokerConfig,
  type SandboxBrokerHandle,
  type StartOptions,
} from "@metaharness/sandbox-broker";
import { nodeFlagsOf } from "./node-flags.js";
import { eventually } from "./eventually.js";
import { createTestDatabase, type TestDatabase } from "./postgres.js";
import { writeServiceTokens, type ServiceTokenFiles } from "./service-tokens.js";

export type BrokerClient = PromiseClient<typeof SandboxBrokerService>;
export type BrokerRole = "harness" | "hand" | "admin" | "gateway";
export const BROKER_ROLES: readonly BrokerRole[] = ["harness", "hand", "admin", "gateway"];
/** The kinds the tests' hand token may register. */
export const HAND_KINDS: readonly string[] = ["kv-device", "mute"];

export interface RunningBroker {
  readonly handle: SandboxBrokerHandle;
  /** An admin's client. */
  readonly client: BrokerClient;
  /** A client presenting `who`'s token (a role's, none, or any token). */
  clientAs(who: BrokerRole | "none" | { token: string }): BrokerClient;
  readonly address: string;
  readonly config: SandboxBrokerConfig;
}

export interface TestBroker extends RunningBroker {
  readonly db: TestDatabase;
  readonly brokerId: string;
  /** The broker's MH_SERVICE_TOKENS_FILE and each role's token. */
  readonly tokens: ServiceTokenFiles<BrokerRole>;
  /** Another broker life on the same database and broker id (after a stop or a crash). */
  start(env?: Record<string, string>, options?: StartOptions): Promise<RunningBroker>;
  stop(): Promise<void>;
}

const MAIN_JS = fileURLToPath(new URL("../../apps/sandbox-broker/dist/main.js", import.meta.url));

/** The example kv device connected to `broker` over ConnectHand, once the broker lists its tools. */
export async function connectKvDevice(broker: TestBroker, handId: string): Promise<KvDeviceHandle> {
  const device = startKvDevice({ address: broker.address, token: broker.tokens.tokens.hand, handId });
  await eventually(async () => {
    try {
      return (await broker.client.listHandTools({ kind: "kv-device" })).handIds.includes(handId) ? true : undefined;
    } catch {
      return undefined;
    }
  }, `the kv device ${handId} to connect`);
  return device;
}

export async function startTestBroker(env: Record<string, string> = {}, options: StartOptions = {}, logger?: Logger): Promise<TestBroker> {
  const db = await createTestDatabase("mh_sbx_test");
  const brokerId = `test-${randomBytes(4).toString("hex")}`;
  const stops: Array<() => Promise<void>> = [() => db.drop()];
  const tokens = await writeServiceTokens(BROKER_ROLES, { hand: HAND_KINDS });
  stops.push(() => tokens.dispose());
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  const start = async (extra: Record<string, string> = {}, opts: StartOptions = options): Promise<RunningBroker> => {
    const config = loadConfig(brokerEnv(db.url, brokerId, { MH_SERVICE_TOKENS_FILE: tokens.file, ...env, ...extra }));
    const handle = await startSandboxBroker(config, logger ?? createLogger({ service: "sandbox-broker", level: config.logLevel }), opts);
    const address = `127.0.0.1:${handle.port}`;
    const raws: Array<{ close(): void }> = [];
    stops.push(async () => {
      for (const raw of raws) raw.close();
      await handle.stop();
    });
    // The tests' clients speak whatever the broker is set to (MH_GRPC_TLS_*), with its own certificate.
    const credentials = (await loadGrpcTls(config)).client;
    const clientAs = (who: BrokerRole | "none" | { token: string }): BrokerClient => {
      const token = who === "none" ? undefined : typeof who === "string" ? tokens.tokens[who] : who.token;
      const raw = createClient(SandboxBrokerClient, address, { credentials, ...(token === undefined ? {} : { bearerToken: token }) });
      raws.push(raw);
      return promisify(raw, SandboxBrokerService);
    };
    return { handle, client: clientAs("admin"), clientAs, address, config };
  };
  try {
    const first = await start();
    return { ...first, db, brokerId, tokens, start, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

export function brokerEnv(databaseUrl: string, brokerId: string, env: Record<string, string>): Record<string, string> {
  return {
    MH_DATABASE_URL: databaseUrl,
    MH_GRPC_PORT: "0",
    MH_BROKER_ID: brokerId,
    MH_LOG_LEVEL: process.env["MH_TEST_LOG_LEVEL"] ?? "silent",
    // Package layers outlive a broker: the tests' brokers share one directory of their own.
    MH_LAYER_DIR: join(tmpdir(), "mh-test-layers"),
    ...env,
  };
}

export interface BrokerProcess {
  readonly address: string;
  readonly client: BrokerClient;
  readonly child: ChildProcess;
  /** SIGKILL, like a crash or the OOM killer; resolves once the process is gone. */
  crash(): Promise<void>;
}

/** The broker as its own process (dist/main.js), for tests that kill it; `token` is its client's. */
export async function spawnBrokerProcess(env: Record<string, string>, token: string): Promise<BrokerProcess> {
  const child = spawn(process.execPath, [...nodeFlagsOf(MAIN_JS), MAIN_JS], {
    env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", ...env, MH_LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the broker process did not start within 20 s")), 20_000);
      child.once("exit", (code) => reject(new Error(`the broker process exited with ${code ?? "a signal"}`)));
      createInterface({ input: child.stdout }).on("line", (line) => {
        const entry = parse(line);
        if (entry?.["msg"] === "sandbox-broker serving" && typeof entry["port"] === "number") {
          clearTimeout(timer);
          resolve(entry["port"]);
        }
      });
    });
    const address = `127.0.0.1:${port}`;
    const raw = createClient(SandboxBrokerClient, address, { bearerToken: token });
    return {
      address,
      client: promisify(raw, SandboxBrokerService),
      child,
      crash: async () => {
        raw.close();
        child.kill("SIGKILL");
        await exited;
      },
    };
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }
}

function parse(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Provisions a sandbox of `sessionId` on a hand of `kind` once one has connected; its id. */
export function provisionOnHand(broker: PromiseClient<typeof SandboxBrokerService>, sessionId: string, kind: string): Promise<string> {
  return eventually(async () => {
    try {
      return (await broker.provision({ fork: undefined, key: "", sessionId, resources: undefined, handKind: kind })).sandbox?.sandboxId;
    } catch (err) {
      if ((err as { code?: string }).code === "FAILED_PRECONDITION") return undefined; // not connected yet
      throw err;
    }
  }, `a ${kind} hand to connect`);
}

let calls = 0;
/** A fresh call id ("toolu_" like the model's tool_use ids). */
export function callId(): string {
  calls++;
  return `toolu_${randomBytes(6).toString("hex")}_${calls}`;
}

/** Execute a tool with a fresh call id. */
export function run(
  client: BrokerClient,
  sandboxId: string,
  name: string,
  input: Record<string, unknown>,
  extra: { callId?: string; timeoutMs?: number; sessionId?: string } = {},
): Promise<ExecuteResponse> {
  return client.execute(
    { eventSeq: 0,
      sandboxId,
      name,
      input,
      callId: extra.callId ?? callId(),
      sessionId: extra.sessionId ?? "",
      timeoutMs: extra.timeoutMs ?? 0,
    },
    { deadlineMs: 120_000 },
  );
}

/** Provisions a bubblewrap sandbox for `sessionId` with `resources` (zeros: defaults); its id. */
export async function provision(
  client: BrokerClient,
  sessionId: string,
  resources: Partial<NonNullable<Parameters<BrokerClient["provision"]>[0]["resources"]>> = {},
): Promise<string> {
  return (await provisionResponse(client, sessionId, resources)).sandbox!.sandboxId;
}

/** As provision, with the whole answer (repository failures included). */
export async function provisionResponse(
  client: BrokerClient,
  sessionId: string,
  resources: Partial<NonNullable<Parameters<BrokerClient["provision"]>[0]["resources"]>> = {},
): Promise<Awaited<ReturnType<BrokerClient["provision"]>>> {
  return client.provision({ fork: undefined, key: "",
    sessionId,
    handKind: "",
    resources: {
      cpuMillis: 0,
      memoryBytes: 0,
      diskBytes: 0,
      maxProcesses: 0,
      lifetimeSeconds: 0,
      idleTimeoutSeconds: 0,
      network: undefined,
      files: [],
      repositories: [],
      packages: undefined,
      ...resources,
    },
  });
}

export async function rejection(p: Promise<unknown>): Promise<{ code: string; field?: string | undefined; message: string }> {
  try {
    await p;
  } catch (err) {
    return err as { code: string; field?: string; message: string };
  }
  throw new Error("expected the call to fail");
}
