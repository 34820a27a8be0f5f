/**
 * The embedded default: every service of a deployment in this one process, on the same code
 * paths, with only the adapters swapped. PGlite instead of a PostgreSQL server (one database all
 * services share, in a data directory or in memory), the in-process bus instead of Kafka (the session
 * log's outbox relay publishes to it, the harness takes its wakes from it), the real bubblewrap
 * sandbox broker, the credential vault proxy (its master key and service tokens in files, see
 * dev-secrets.ts), the offline model (or Anthropic's API when a key is given), and the gateway in
 * front. Every setting is passed explicitly, never read from MH_* variables, so nothing here
 * reaches for a Postgres or Kafka server.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadConfig as credentialProxyConfig, startCredentialProxy } from "@metaharness/credential-vault-proxy";
import { createMemoryBus } from "@metaharness/event-bus";
import { loadConfig as gatewayConfig, loadUiConfig, startGateway } from "@metaharness/gateway";
import { loadConfig as harnessConfig, startHarness } from "@metaharness/harness";
import { startOfflineModel, type Scenario } from "@metaharness/offline-model";
import { loadConfig as brokerConfig, startSandboxBroker } from "@metaharness/sandbox-broker";
import { createLogger, type LogLevel } from "@metaharness/service-kit/logging";
import { loadConfig as sessionLogConfig, startSessionLog } from "@metaharness/session-log";
import { DEV_HAND_KIND, writeDevSecrets } from "./dev-secrets.js";
import { BWRAP_PATH, ensurePortFree, ensureSandboxSupport } from "./preflight.js";

export interface StackOptions {
  /** Where the services keep their databases (one PGlite directory each); undefined: in memory. */
  readonly dataDir?: string;
  /** The gateway's address; port 0 picks a free one. */
  readonly host?: string;
  readonly port?: number;
  /** The API key of tenant "local", which the CLI uses. */
  readonly apiKey: string;
  /** More keys the gateway accepts, as MH_GATEWAY_API_KEYS writes them (`key:tenant,...`): other tenants. */
  readonly moreApiKeys?: string;
  /** The bwrap the sandbox broker runs (MH_BWRAP_PATH); default /usr/bin/bwrap, installed when missing. */
  readonly bwrapPath?: string;
  /** Told as each part comes up (and before bubblewrap is installed), so a start is never a silent wait. */
  readonly onProgress?: (progress: StackProgress) => void;
  /** Anthropic's API with this key instead of the offline model. */
  readonly anthropicApiKey?: string;
  /** Scenarios the offline model knows besides its echoing default. */
  readonly scenarios?: readonly Scenario[];
  /** The offline model's pace: time to first token and output tokens per second. */
  readonly offlinePace?: { readonly ttftMs: number; readonly tokensPerSecond: number };
  /** Service logs (JSON lines) go to stderr at this level. */
  readonly logLevel?: LogLevel;
  /** Jaeger's query API, for the session page's trace view (MH_JAEGER_QUERY_URL). */
  readonly jaegerQueryUrl?: string;
}

export interface StackComponent {
  readonly name: string;
  readonly detail: string;
  readonly startMs: number;
}

/** A part that came up, or a line about the machine's setup. */
export type StackProgress = { readonly kind: "component"; readonly component: StackComponent } | { readonly kind: "setup"; readonly line: string };

export interface Stack {
  /** The gateway: the SDK's baseURL. */
  readonly url: string;
  readonly apiKey: string;
  /** "offline" or "anthropic". */
  readonly model: "offline" | "anthropic";
  readonly components: readonly StackComponent[];
  readonly startMs: number;
  /**
   * For an external hand: the sandbox broker's host:port, the token file the hand presents (it
   * registers `kind` only), and an operator's token file for the broker (role admin), to
   * provision sandboxes on it with `hand_kind`.
   */
  readonly hands: { readonly brokerAddress: string; readonly tokenFile: string; readonly kind: string; readonly operatorTokenFile: string };
  /** Stops every service, the front first; idempotent. */
  stop(): Promise<void>;
}

/** Which model answers without an API key, and how to use a real one. */
const OFFLINE_MODEL_DETAIL = "the offline model (no API key: it acts on plain requests)";

/** A broker id of its own: two stacks on one machine must not clean up each other's sandboxes. */
function brokerId(dataDir: string | undefined): string {
  if (dataDir === undefined) return `mh-${process.pid}-${randomBytes(3).toString("hex")}`;
  return `mh-dev-${createHash("sha256").update(resolve(dataDir)).digest("hex").slice(0, 10)}`;
}

/**
 * The one embedded database every service of the stack opens (packages/db shares one PGlite per
 * directory or in-memory name within a process; each service's migrations own its tables, as on
 * a shared server): one PGlite to start instead of one per service.
 */
async function databaseUrl(dataDir: string | undefined): Promise<string> {
  if (dataDir === undefined) return `pglite:memory:mh-dev-${process.pid}-${randomBytes(3).toString("hex")}`;
  const dir = resolve(dataDir, "db");
  await mkdir(dir, { recursive: true });
  return `pglite://${dir}`;
}

export async function startStack(opts: StackOptions): Promise<Stack> {
  const started = Date.now();
  const level = opts.logLevel ?? "error";
  const logger = (service: string) => createLogger({ service, level, destination: process.stderr });
  const stops: Array<{ name: string; run: () => Promise<void> }> = [];
  const components: StackComponent[] = [];
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      for (const s of stops.splice(0).reverse()) await s.run().catch(() => undefined);
    })());
  const timed = async <T>(name: string, detail: string, start: () => Promise<T>): Promise<T> => {
    const t0 = Date.now();
    const value = await start();
    const component = { name, detail, startMs: Date.now() - t0 };
    components.push(component);
    opts.onProgress?.({ kind: "component", component });
    return value;
  };

  try {
    // The port first: taken, it is said at once rather than after every service started.
    await ensurePortFree(opts.host ?? "127.0.0.1", opts.port ?? 0);
    const bwrapPath = opts.bwrapPath ?? BWRAP_PATH;
    await timed("bubblewrap", bwrapPath, () =>
      ensureSandboxSupport({ bwrapPath, explicitPath: opts.bwrapPath !== undefined, progress: (line) => opts.onProgress?.({ kind: "setup", line }) }),
    );
    const bus = createMemoryBus({ maxRecordsPerPartition: 10_000 });
    stops.push({ name: "bus", run: () => bus.close() });
    const store = opts.dataDir === undefined ? "PGlite in memory" : `PGlite in ${opts.dataDir}`;
    const dbUrl = await databaseUrl(opts.dataDir);

    const secrets = await writeDevSecrets(opts.dataDir);
    stops.push({ name: "secrets", run: () => secrets.dispose() });
    const logConfig = sessionLogConfig({
      MH_GRPC_PORT: "0",
      MH_DATABASE_URL: dbUrl,
      MH_SERVICE_TOKENS_FILE: secrets.tokensFile.log,
      MH_RELAY_POLL_MS: "50",
      MH_LOG_LEVEL: level,
    });
    const log = await timed("session log", `${store}, outbox to the in-process bus`, () => startSessionLog(logConfig, logger("session-log"), { bus }));
    stops.push({ name: "session log", run: () => log.stop() });
    const logAddr = `127.0.0.1:${log.port}`;

    const vaultConfig = credentialProxyConfig({
      MH_GRPC_PORT: "0",
      MH_REMOTE_HTTP_PORT: "0",
      MH_DATABASE_URL: dbUrl,
      MH_SESSION_LOG_ADDR: logAddr,
      MH_SESSION_LOG_TOKEN_FILE: secrets.tokenFile("log", "proxy"),
      MH_MASTER_KEY_FILE: secrets.masterKeyFile,
      MH_SERVICE_TOKENS_FILE: secrets.tokensFile.proxy,
      // Everything of `mh dev` is on this machine, the demo's git server and MCP servers included.
      MH_CREDENTIAL_PROXY_ALLOW_PRIVATE_NETWORKS: "true",
      MH_LOG_LEVEL: level,
    });
    const vault = await timed("credential vault proxy", `${store}, master key in a file`, () =>
      startCredentialProxy(vaultConfig, logger("credential-vault-proxy")),
    );
    stops.push({ name: "credential vault proxy", run: () => vault.stop() });
    const vaultAddr = `127.0.0.1:${vault.port}`;

    const sbxConfig = brokerConfig({
      MH_GRPC_PORT: "0",
      MH_DATABASE_URL: dbUrl,
      MH_SESSION_LOG_ADDR: logAddr,
      MH_SESSION_LOG_TOKEN_FILE: secrets.tokenFile("log", "broker"),
      MH_CREDENTIAL_PROXY_ADDR: vaultAddr,
      MH_CREDENTIAL_PROXY_TOKEN_FILE: secrets.tokenFile("proxy", "broker"),
      MH_SERVICE_TOKENS_FILE: secrets.tokensFile.broker,
      MH_BROKER_ID: brokerId(opts.dataDir),
      MH_BWRAP_PATH: bwrapPath,
      // Environments' package layers: kept with the data directory (or for this user's temp dir).
      MH_LAYER_DIR: opts.dataDir === undefined ? join(tmpdir(), "metaharness-layers") : join(resolve(opts.dataDir), "layers"),
      // Workspace snapshots: a sandbox lost, or paused when idle, comes back with its files.
      MH_WORKSPACE_STORE: `dir:${opts.dataDir === undefined ? join(tmpdir(), "metaharness-workspaces") : join(resolve(opts.dataDir), "workspaces")}`,
      MH_LOG_LEVEL: level,
    });
    const broker = await timed("sandbox broker", `bubblewrap (${sbxConfig.bwrapPath})`, () => startSandboxBroker(sbxConfig, logger("sandbox-broker")));
    stops.push({ name: "sandbox broker", run: () => broker.stop() });

    let modelEnv: Record<string, string>;
    if (opts.anthropicApiKey !== undefined) {
      modelEnv = { ANTHROPIC_API_KEY: opts.anthropicApiKey };
      await timed("model", "Anthropic's API (ANTHROPIC_API_KEY)", () => Promise.resolve());
    } else {
      const pace = opts.offlinePace ?? { ttftMs: 300, tokensPerSecond: 80 };
      const model = await timed("model", OFFLINE_MODEL_DETAIL, () =>
        startOfflineModel({ scenarios: opts.scenarios ?? [], ...pace }),
      );
      stops.push({ name: "model", run: () => model.close() });
      modelEnv = { MH_MODEL_BASE_URL: model.url, ANTHROPIC_API_KEY: "offline" };
    }

    const brainConfig = harnessConfig({
      MH_GRPC_PORT: "0",
      MH_SESSION_LOG_ADDR: logAddr,
      MH_SESSION_LOG_TOKEN_FILE: secrets.tokenFile("log", "harness"),
      MH_SERVICE_TOKENS_FILE: secrets.tokensFile.harness,
      MH_SANDBOX_BROKER_ADDR: `127.0.0.1:${broker.port}`,
      MH_SANDBOX_BROKER_TOKEN_FILE: secrets.tokenFile("broker", "harness"),
      MH_CREDENTIAL_PROXY_ADDR: vaultAddr,
      MH_CREDENTIAL_PROXY_TOKEN_FILE: secrets.tokenFile("proxy", "harness"),
      MH_KAFKA_WAKE: "true",
      MH_LOG_LEVEL: level,
      ...modelEnv,
    });
    const harness = await timed("harness", "tool loop, wakes from the in-process bus", () => startHarness(brainConfig, logger("harness"), { bus }));
    stops.push({ name: "harness", run: () => harness.stop() });

    const gwConfig = gatewayConfig({
      MH_HTTP_HOST: opts.host ?? "127.0.0.1",
      MH_HTTP_PORT: String(opts.port ?? 0),
      MH_DATABASE_URL: dbUrl,
      MH_SESSION_LOG_ADDR: logAddr,
      MH_SESSION_LOG_TOKEN_FILE: secrets.tokenFile("log", "gateway"),
      MH_HARNESS_ADDR: `127.0.0.1:${harness.port}`,
      MH_HARNESS_TOKEN_FILE: secrets.tokenFile("harness", "gateway"),
      MH_CREDENTIAL_PROXY_ADDR: vaultAddr,
      MH_CREDENTIAL_PROXY_TOKEN_FILE: secrets.tokenFile("proxy", "gateway"),
      MH_SANDBOX_BROKER_ADDR: `127.0.0.1:${broker.port}`,
      MH_SANDBOX_BROKER_TOKEN_FILE: secrets.tokenFile("broker", "gateway"),
      MH_GATEWAY_API_KEYS: [`${opts.apiKey}:local`, ...(opts.moreApiKeys === undefined || opts.moreApiKeys === "" ? [] : [opts.moreApiKeys])].join(","),
      MH_LOG_LEVEL: level,
    });
    const ui = loadUiConfig(opts.jaegerQueryUrl === undefined ? {} : { MH_JAEGER_QUERY_URL: opts.jaegerQueryUrl });
    const gateway = await timed("gateway", "Claude Managed Agents API", () => startGateway({ ...gwConfig, ui }, logger("gateway")));
    stops.push({ name: "gateway", run: () => gateway.stop() });

    return {
      url: gateway.url,
      apiKey: opts.apiKey,
      model: opts.anthropicApiKey === undefined ? "offline" : "anthropic",
      components,
      startMs: Date.now() - started,
      hands: {
        brokerAddress: `127.0.0.1:${broker.port}`,
        tokenFile: secrets.tokenFile("broker", "hand"),
        kind: DEV_HAND_KIND,
        operatorTokenFile: secrets.tokenFile("broker", "operator"),
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The data directory of `mh dev` unless told otherwise: .local/dev under the current directory. */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  return env["MH_DEV_DIR"] ?? join(".local", "dev");
}
