/**
 * The whole stack behind the HTTP API, on real services: a brain (session log on real Postgres,
 * offline model, harness; see harness.ts) and the gateway in front of it, on its own fresh
 * database and port 0, with two tenants. Tests talk to it with the official SDK, changing only
 * baseURL; `client()` counts the HTTP requests it makes, so tests can see the SDK's retries.
 */
import Anthropic from "@anthropic-ai/sdk";
import { loadConfig, startGateway, type GatewayHandle } from "@metaharness/gateway";
import type { Scenario } from "@metaharness/offline-model";
import { createLogger } from "@metaharness/service-kit";
import { startBrain, type Brain } from "./harness.js";
import { createTestDatabase, type TestDatabase } from "./postgres.js";

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
  /** The SDK as a user would build it: only apiKey and baseURL (and fewer retries, for speed). */
  client(key?: string, options?: { maxRetries?: number }): CountingClient;
  stop(): Promise<void>;
}

export async function startStack(opts: {
  scenarios: Scenario[];
  /** The gateway's settings. */
  env?: Record<string, string>;
  /** The harness's settings. */
  harnessEnv?: Record<string, string>;
  /** A real sandbox broker (bubblewrap) behind the harness. */
  broker?: Parameters<typeof startBrain>[0]["broker"];
}): Promise<Stack> {
  const brain = await startBrain({ scenarios: opts.scenarios, ...(opts.harnessEnv === undefined ? {} : { env: opts.harnessEnv }), ...(opts.broker === undefined ? {} : { broker: opts.broker }) });
  const stops: Array<() => Promise<void>> = [() => brain.stop()];
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  try {
    const db = await createTestDatabase("mh_gw_test");
    stops.push(() => db.drop());
    const config = loadConfig({
      MH_HTTP_PORT: "0",
      MH_DATABASE_URL: db.url,
      MH_SESSION_LOG_ADDR: `127.0.0.1:${brain.log.handle.port}`,
      MH_HARNESS_ADDR: `127.0.0.1:${brain.harnesses[0]!.port}`,
      MH_GATEWAY_API_KEYS: `${KEY_A}:tenant-a,${KEY_B}:tenant-b`,
      MH_GATEWAY_SSE_HEARTBEAT_MS: "200",
      MH_LOG_LEVEL: process.env["MH_TEST_LOG_LEVEL"] ?? "silent",
      ...opts.env,
    });
    const gateway = await startGateway(config, createLogger({ service: "gateway", level: config.logLevel }));
    stops.push(() => gateway.stop());
    return {
      brain,
      gateway,
      db,
      client(key = KEY_A, options = {}) {
        let count = 0;
        const sdk = new Anthropic({
          apiKey: key,
          baseURL: gateway.url,
          maxRetries: options.maxRetries ?? 2,
          fetch: (input, init) => {
            count += 1;
            return fetch(input, init);
          },
        });
        return { sdk, requests: () => count };
      },
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
