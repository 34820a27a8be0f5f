/**
 * Every setting of the gateway, read from the environment in this one place.
 */
import { env, readConfig, type EnvVar, METRICS_ENV } from "@metaharness/service-kit/config";
import { GRPC_TLS_ENV, MAX_EVENT_BYTES } from "@metaharness/service-kit/grpc";
import type { BootstrapKey } from "./auth/api-keys.js";
import { MAX_KEY_CHARS, RESERVED_KEY_PREFIXES } from "./auth/key-prefixes.js";

export const TENANT_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const KEY_PATTERN = new RegExp(`^[\\x21-\\x7e]{16,${MAX_KEY_CHARS}}$`);

/**
 * `key1:tenantA,key2:tenantB`. Keys are 16-256 printable characters without spaces; tenants
 * 1-64 of [A-Za-z0-9_-]. Problems name the entry by position, never the key itself.
 */
function apiKeys(name: string): EnvVar<BootstrapKey[]> {
  return {
    name,
    read(raw) {
      if (raw === undefined) return { ok: true, value: [] };
      const out: BootstrapKey[] = [];
      const entries = raw.split(",").map((s) => s.trim()).filter((s) => s !== "");
      for (const [i, entry] of entries.entries()) {
        const colon = entry.lastIndexOf(":");
        const key = entry.slice(0, Math.max(colon, 0));
        const tenant = entry.slice(colon + 1);
        if (colon <= 0 || !KEY_PATTERN.test(key) || !TENANT_PATTERN.test(tenant)) {
          return {
            ok: false,
            problem: `${name} entry ${i + 1} is invalid (expected key:tenant, the key 16-256 printable characters, the tenant 1-64 of A-Z a-z 0-9 _ -)`,
          };
        }
        if (RESERVED_KEY_PREFIXES.some((p) => key.startsWith(p))) {
          return { ok: false, problem: `${name} entry ${i + 1} starts with a prefix reserved for environment keys and sessions tokens (${RESERVED_KEY_PREFIXES.join(", ")})` };
        }
        out.push({ key, tenant });
      }
      return { ok: true, value: out };
    },
  };
}

/**
 * The default of MH_GATEWAY_WAKE_SKIP_LEASE_MS, from the harness: the turn's last append sets its
 * lease to run out a margin after its linger, a sixth of MH_LEASE_TTL_MS and never more than
 * 0.5 s whatever the TTL (LINGER_MARGIN_MAX_MS, apps/harness/src/lease-keeper.ts), so a lease
 * with more than that left has a holder still lingering (or working); the rest is time for the
 * input to reach that holder's follow of the log before its linger ends.
 * test/integration/gateway/wake-skip.test.ts keeps it in step with the harness.
 */
const HARNESS_LINGER_MARGIN_MAX_MS = 500;
const FOLLOW_DELIVERY_SLACK_MS = 500;
const DEFAULT_WAKE_SKIP_LEASE_MS = HARNESS_LINGER_MARGIN_MAX_MS + FOLLOW_DELIVERY_SLACK_MS;

export function loadConfig(source: NodeJS.ProcessEnv = process.env) {
  return readConfig(
    {
      host: env.string("MH_HTTP_HOST", { default: "127.0.0.1" }),
      port: env.port("MH_HTTP_PORT", { default: 8080 }),
      sessionLogAddress: env.string("MH_SESSION_LOG_ADDR", { default: "127.0.0.1:15051" }),
      // This gateway's service token for the session log (role admin).
      sessionLogTokenFile: env.absolutePath("MH_SESSION_LOG_TOKEN_FILE"),
      // This gateway's service token for the harness (role admin there).
      harnessTokenFile: env.absolutePath("MH_HARNESS_TOKEN_FILE"),
      harnessAddress: env.string("MH_HARNESS_ADDR", { default: "127.0.0.1:15052" }),
      // The credential vault proxy (vaults, and the tokens of sessions' repositories) and the file
      // holding this gateway's service token for it (role admin). Without them, vault routes say so.
      credentialProxyAddress: env.optional(env.string("MH_CREDENTIAL_PROXY_ADDR")),
      credentialProxyTokenFile: env.optional(env.absolutePath("MH_CREDENTIAL_PROXY_TOKEN_FILE")),
      // The sandbox broker, which builds environments' package layers, and the file holding this
      // gateway's service token for it (role gateway). Without them, environments with packages are refused.
      sandboxBrokerAddress: env.optional(env.string("MH_SANDBOX_BROKER_ADDR")),
      sandboxBrokerTokenFile: env.optional(env.absolutePath("MH_SANDBOX_BROKER_TOKEN_FILE")),
      // postgres://... for a server; pglite:memory or pglite:///dir for embedded Postgres.
      databaseUrl: env.url("MH_DATABASE_URL", {
        default: "postgres://metaharness:metaharness@127.0.0.1:5432/metaharness",
        protocols: ["postgres", "postgresql", "pglite"],
      }),
      poolSize: env.int("MH_PG_POOL_SIZE", { default: 10, min: 2, max: 200 }),
      apiKeys: apiKeys("MH_GATEWAY_API_KEYS"),
      // Absent anthropic-beta is accepted by default (see docs/api.md); true refuses it with a 400.
      requireBetaHeader: env.bool("MH_GATEWAY_REQUIRE_BETA_HEADER", { default: false }),
      // A request's events go to the session log in one EmitEvents call, which refuses more than
      // one gRPC message carries (RESOURCE_EXHAUSTED, answered as a 413).
      bodyLimitBytes: env.int("MH_GATEWAY_BODY_LIMIT_BYTES", { default: 8 * 1024 * 1024, min: 1024, max: MAX_EVENT_BYTES }),
      heartbeatMs: env.durationMs("MH_GATEWAY_SSE_HEARTBEAT_MS", { default: 15_000, min: 100, max: 600_000 }),
      maxStreamsPerTenant: env.int("MH_GATEWAY_MAX_STREAMS_PER_TENANT", { default: 100, min: 1, max: 100_000 }),
      wakeTimeoutMs: env.durationMs("MH_GATEWAY_WAKE_TIMEOUT_MS", { default: 2000, min: 10, max: 60_000 }),
      // No Wake after a user's input when the append's answer says the session's lease has more
      // than this left: its holder still follows the log and takes the input from there
      // (sessions/append.ts). 600 s (a lease's longest TTL): always wake.
      wakeSkipLeaseMs: env.durationMs("MH_GATEWAY_WAKE_SKIP_LEASE_MS", { default: DEFAULT_WAKE_SKIP_LEASE_MS, min: 0, max: 600_000 }),
      keyCacheMs: env.durationMs("MH_GATEWAY_KEY_CACHE_MS", { default: 30_000, min: 0, max: 3_600_000 }),
      // A session's target fields are kept at most this long: a change whose NOTIFY is lost is seen then (sessions/target-cache.ts).
      targetCacheMs: env.durationMs("MH_GATEWAY_TARGET_CACHE_MS", { default: 30_000, min: 0, max: 3_600_000 }),
      // Self-hosted environments: the lease a work item's heartbeat extends, unless it asks for another.
      workLeaseTtlSeconds: env.int("MH_GATEWAY_WORK_LEASE_TTL_SECONDS", { default: 30, min: 1, max: 600 }),
      // Stopped work items are deleted this long after they stopped (0: kept forever), swept this often.
      workRetentionSeconds: env.int("MH_GATEWAY_WORK_RETENTION_SECONDS", { default: 7 * 24 * 3600, min: 0, max: 10 * 365 * 24 * 3600 }),
      workPurgeEveryMs: env.int("MH_GATEWAY_WORK_PURGE_EVERY_MS", { default: 10 * 60_000, min: 100, max: 24 * 3600_000 }),
      logLevel: env.enumOf("MH_LOG_LEVEL", ["trace", "debug", "info", "warn", "error", "silent"], { default: "info" }),
      otlpEndpoint: env.optionalUrl("MH_OTLP_ENDPOINT"),
      // Metrics (MH_METRICS_PORT, MH_OTLP_METRICS_ENDPOINT): see the service kit's metrics-env.ts.
      ...METRICS_ENV,
      // TLS on the gRPC links (MH_GRPC_TLS_*): see the service kit's grpc-tls.ts.
      ...GRPC_TLS_ENV,
    },
    source,
  );
}

export type GatewayConfig = ReturnType<typeof loadConfig>;
