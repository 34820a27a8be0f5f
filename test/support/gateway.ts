/**
 * The whole stack behind the HTTP API, on real services: a brain (session log on real Postgres,
 * offline model, harness; see harness.ts), the credential vault proxy (vault.ts; the harness
 * calls MCP tools through it, the gateway manages vaults and repositories' tokens in it, a sandbox
 * broker started with `broker: true` reaches it for git remotes and egress) unless `vault: false`, and the gateway in front of them, on its own fresh database and port 0, with two tenants. Tests talk to it with the official SDK, changing only
 * baseURL; `client()` counts the HTTP requests it makes, so tests can see the SDK's retries.
 */
import Anthropic from "@anthropic-ai/sdk";
import { loadConfig, loadUiConfig, startGateway, type GatewayHandle } from "@metaharness/gateway";
import type { Scenario } from "@metaharness/offline-model";
import { createLogger, type Logger } from "@metaharness/service-kit/logging";
import { recordOpenApi, recordingFetch } from "../conformance/recorder.js";
import { startBrain, type Brain } from "./harness.js";
import { createTestDatabase, type TestDatabase } from "./postgres.js";
import { startTestLog } from "./session-log.js";
import { startTestVault, type TestVault } from "./vault.js";

/** Two tenants, so every test can check isolation. */
export const KEY_A = "mh-test-key-tenant-a-0123456789";
export const KEY_B = "mh-test-key-tenant-b-0123456789";

export interface CountingClient {
  readonly sdk: Anthropic;
  /** HTTP requests sent so far (retries included). */
  readonly requests: () => number;
}

export interface Stack {
  readonly brain: Brain;
  readonly gateway: GatewayHandle;
  readonly db: TestDatabase;
  /** The credential vault proxy; undefined for a stack started with `vault: false`. */
  readonly vault: TestVault | undefined;
  /** The SDK as a user would build it: only apiKey and baseURL (and fewer retries, for speed). */
  /**
   * The SDK as a user would build it: only apiKey and baseURL (and fewer retries, for speed);
   * `extensions` asks for Meta-Harness's additions to the events (the MH-Extensions header).
   */
  client(key?: string, options?: { maxRetries?: number; extensions?: boolean }): CountingClient;
  /** Another gateway instance on the same database and services, its settings changed by `env`; stopped with the stack. */
  anotherGateway(env: Record<string, string>): Promise<GatewayHandle>;
  stop(): Promise<void>;
}

export interface StackOptions {
  readonly scenarios: Scenario[];
  /** The offline model's context window (its default otherwise: 200,000 tokens). */
  readonly modelWindowTokens?: number;
  /**
   * The gateway's settings beyond the defaults, its session page's too (e.g.
   * MH_JAEGER_QUERY_URL): from here only, never from this process's environment.
   */
  readonly env?: Record<string, string>;
  /** The harness's settings. */
  readonly harnessEnv?: Record<string, string>;
  /** The session log's settings (its outbox relay is off unless MH_RELAY_ENABLED=true). */
  readonly logEnv?: Record<string, string>;
  /** Start the credential vault proxy (default true). */
  readonly vault?: boolean;
  /** The credential vault proxy's settings. */
  readonly vaultEnv?: Record<string, string>;
  /** A real sandbox broker (bubblewrap) behind the harness, with the vault proxy for its egress (default false). */
  readonly broker?: boolean;
  /** The sandbox broker's settings, beyond its wiring to the vault proxy. */
  readonly brokerEnv?: Record<string, string>;
  /** Loggers of every service (tests that scan log lines pass capturing ones). */
  readonly logger?: (service: string) => Logger;
}

export async function startStack(opts: StackOptions): Promise<Stack> {
  const stops: Array<() => Promise<void>> = [];
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  try {
    // The proxy asks the session log about sessions and the harness asks the proxy: the log
    // starts first (on port 0), so that both can be given its address.
    const log = await startTestLog({ MH_RELAY_ENABLED: "false", ...opts.logEnv }, { ...(opts.logger === undefined ? {} : { logger: opts.logger("session-log") }) });
    stops.push(() => log.stop());
    const vault =
      opts.vault === false
        ? undefined
        : await startTestVault({
            sessionLog: log.reach("proxy"),
            logger: opts.logger?.("credential-vault-proxy"),
            ...(opts.vaultEnv === undefined ? {} : { env: opts.vaultEnv }),
          });
    if (vault !== undefined) stops.push(() => vault.stop());
    const brokerEnv: Record<string, string> =
      vault === undefined ? { ...opts.brokerEnv } : { ...opts.brokerEnv, MH_CREDENTIAL_PROXY_ADDR: vault.address, MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.broker };
    const brain = await startBrain({
      scenarios: opts.scenarios,
      ...(opts.modelWindowTokens === undefined ? {} : { modelWindowTokens: opts.modelWindowTokens }),
      log,
      env: {
        ...(vault === undefined ? {} : { MH_CREDENTIAL_PROXY_ADDR: vault.address, MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.harness }),
        ...opts.harnessEnv,
      },
      ...(opts.broker === true ? { broker: brokerEnv } : {}),
      ...(opts.logger === undefined ? {} : { logger: opts.logger }),
    });
    stops.push(() => brain.stop());
    const db = await createTestDatabase("mh_gw_test");
    stops.push(() => db.drop());
    const configEnv: Record<string, string> = {
      MH_HTTP_PORT: "0",
      MH_DATABASE_URL: db.url,
      ...brain.log.reach("admin"),
      MH_HARNESS_ADDR: `127.0.0.1:${brain.harnesses[0]!.port}`,
      MH_HARNESS_TOKEN_FILE: brain.harnessTokens.tokenFile.admin,
      MH_GATEWAY_API_KEYS: `${KEY_A}:tenant-a,${KEY_B}:tenant-b`,
      MH_GATEWAY_SSE_HEARTBEAT_MS: "200",
      MH_LOG_LEVEL: process.env["MH_TEST_LOG_LEVEL"] ?? "silent",
      ...(vault === undefined ? {} : { MH_CREDENTIAL_PROXY_ADDR: vault.address, MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.admin }),
      // Environments' package layers are built by the broker, when the stack has one.
      ...(brain.broker === undefined ? {} : { MH_SANDBOX_BROKER_ADDR: brain.broker.address, MH_SANDBOX_BROKER_TOKEN_FILE: brain.broker.tokens.tokenFile.gateway }),
      ...opts.env,
    };
    const start = async (env: Record<string, string>): Promise<GatewayHandle> => {
      const config = loadConfig({ ...configEnv, ...env });
      const handle = await startGateway({ ...config, ui: loadUiConfig(opts.env ?? {}) }, opts.logger?.("gateway") ?? createLogger({ service: "gateway", level: config.logLevel }));
      stops.push(() => handle.stop());
      return handle;
    };
    const gateway = await start({});
    await recordOpenApi(gateway.url);
    return {
      brain,
      gateway,
      db,
      vault,
      client(key = KEY_A, options = {}) {
        let count = 0;
        const recorded = recordingFetch(fetch);
        const sdk = new Anthropic({
          apiKey: key,
          baseURL: gateway.url,
          maxRetries: options.maxRetries ?? 2,
          ...(options.extensions === true ? { defaultHeaders: { "MH-Extensions": "true" } } : {}),
          fetch: (input, init) => {
            count += 1;
            return recorded(input, init);
          },
        });
        return { sdk, requests: () => count };
      },
      anotherGateway: start,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A raw request to the gateway, for what the SDK cannot send (bad keys, odd headers). */
export async function raw(
  stack: Stack,
  method: string,
  path: string,
  init: { key?: string | null; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: Headers; json: unknown }> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key !== null) headers["x-api-key"] = init.key ?? KEY_A;
  if (init.body !== undefined) headers["content-type"] ??= "application/json";
  const res = await fetch(`${stack.gateway.url}${path}`, { method, headers, ...(init.body === undefined ? {} : { body: init.body }) });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, headers: res.headers, json };
}

/** The SDK error `p` fails with (the test fails if it succeeds or throws something else). */
export async function apiFailure(p: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof Anthropic.APIError)) throw new Error(`expected an API error, got ${err === undefined ? "success" : err instanceof Error ? `${err.name}: ${err.message}` : typeof err}`);
  return err;
}
