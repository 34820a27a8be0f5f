/**
 * Every setting of the credential vault proxy, read from the environment in this one place.
 * Secrets are never settings: the master keys and the service tokens are read from files whose
 * paths are configured here, so no secret sits in the process environment or a config dump.
 */
import { env, readConfig, METRICS_ENV } from "@metaharness/service-kit/config";
import { GRPC_HEALTH_ENV, GRPC_TLS_ENV } from "@metaharness/service-kit/grpc";

export function loadConfig(source: NodeJS.ProcessEnv = process.env) {
  return readConfig(
    {
      host: env.string("MH_GRPC_HOST", { default: "127.0.0.1" }),
      port: env.port("MH_GRPC_PORT", { default: 15054 }),
      databaseUrl: env.url("MH_DATABASE_URL", {
        default: "postgres://metaharness:metaharness@127.0.0.1:5432/metaharness",
        protocols: ["postgres", "postgresql", "pglite"],
      }),
      poolSize: env.int("MH_PG_POOL_SIZE", { default: 10, min: 2, max: 500 }),
      /** Where a session's vault ids come from (SessionMetadata.vault_ids). */
      sessionLogAddr: env.string("MH_SESSION_LOG_ADDR", { default: "127.0.0.1:15051" }),
      // This proxy's service token for the session log (role proxy).
      sessionLogTokenFile: env.absolutePath("MH_SESSION_LOG_TOKEN_FILE"),

      /** The active master key: 32 random bytes, base64 or hex, in a file only this service reads. */
      masterKeyFile: env.absolutePath("MH_MASTER_KEY_FILE"),
      /** Older master keys, still able to unwrap until RotateMasterKey re-wraps their data keys. */
      previousMasterKeyFiles: env.list("MH_PREVIOUS_MASTER_KEY_FILES", { default: [] }),
      /** JSON: {"services":[{"name":"gateway","role":"admin","token":"..."}]}; see auth/service-tokens.ts. */
      serviceTokensFile: env.absolutePath("MH_SERVICE_TOKENS_FILE"),

      /** The HTTP endpoint the broker relays sandbox git and egress traffic to. */
      remoteHost: env.string("MH_REMOTE_HTTP_HOST", { default: "127.0.0.1" }),
      remotePort: env.port("MH_REMOTE_HTTP_PORT", { default: 15055 }),
      /** The base URL the broker reaches that endpoint at; http://<host>:<bound port> when unset. */
      remoteAdvertisedUrl: env.optionalUrl("MH_REMOTE_HTTP_URL", { protocols: ["http", "https"] }),
      /** Default and cap of a git remote's or egress endpoint's life. */
      remoteTtlSeconds: env.int("MH_REMOTE_TTL_SECONDS", { default: 24 * 3600, min: 10, max: 7 * 24 * 3600 }),
      /** Scheme of egress requests to their real host (http only for tests against plain servers). */
      egressUpstreamScheme: env.enumOf("MH_EGRESS_UPSTREAM_SCHEME", ["https", "http"], { default: "https" }),
      /** Bytes a git push or egress request body may carry. */
      maxRequestBytes: env.int("MH_REMOTE_MAX_REQUEST_BYTES", { default: 512 * 1024 * 1024, min: 1024 }),
      /**
       * Whether upstreams (MCP servers, token endpoints, git remotes, egress hosts) may be on a
       * private network: loopback, link-local, RFC 1918, CGNAT, ULA. Off by default, because
       * those URLs are the tenants' and must not reach this deployment's own neighbours.
       */
      allowPrivateNetworks: env.bool("MH_CREDENTIAL_PROXY_ALLOW_PRIVATE_NETWORKS", { default: false }),
      /**
       * What unrestricted egress (networking `unrestricted`) may reach on public addresses: these
       * ports ("none": this deployment refuses unrestricted sandboxes) and no host these patterns
       * match. Private addresses it never reaches, whatever the setting above says.
       */
      egressUnrestrictedPorts: env.list("MH_EGRESS_UNRESTRICTED_PORTS", { default: ["80", "443"] }),
      egressDeniedHosts: env.list("MH_EGRESS_DENIED_HOSTS", { default: [] }),
      /** The roots egress verifies upstream HTTPS servers against (egress/upstream-trust.ts). */
      egressTrustFile: env.absolutePath("MH_EGRESS_TRUST_FILE", { default: "/etc/ssl/certs/ca-certificates.crt" }),
      /** One more root for egress upstreams (tests whose upstream has its own CA). */
      egressExtraTrustFile: env.optional(env.absolutePath("MH_EGRESS_EXTRA_TRUST_FILE")),
      upstreamTimeoutMs: env.int("MH_UPSTREAM_TIMEOUT_MS", { default: 120_000, min: 100, max: 3_600_000 }),

      /** A token is refreshed when it expires within this margin (clock skew, call duration). */
      refreshSkewMs: env.int("MH_OAUTH_REFRESH_SKEW_MS", { default: 30_000, min: 0, max: 3_600_000 }),
      tokenEndpointTimeoutMs: env.int("MH_OAUTH_TIMEOUT_MS", { default: 10_000, min: 100, max: 120_000 }),
      mcpTimeoutMs: env.int("MH_MCP_TIMEOUT_MS", { default: 120_000, min: 100, max: 3_600_000 }),
      // How long a finished MCP call's outcome is kept to answer a repeat of it (mcp/call-ledger.ts).
      mcpCallRetentionMs: env.durationMs("MH_MCP_CALL_RETENTION", { default: 7 * 24 * 3_600_000, min: 60_000 }),
      /** How long a session's vault ids are cached (they are fixed when the session is created). */
      sessionCacheMs: env.int("MH_SESSION_CACHE_MS", { default: 30_000, min: 0, max: 3_600_000 }),

      logLevel: env.enumOf("MH_LOG_LEVEL", ["trace", "debug", "info", "warn", "error", "silent"], { default: "info" }),
      otlpEndpoint: env.optionalUrl("MH_OTLP_ENDPOINT"),
      // Metrics (MH_METRICS_PORT, MH_OTLP_METRICS_ENDPOINT): see the service kit's metrics-env.ts.
      ...METRICS_ENV,
      // TLS on the gRPC links (MH_GRPC_TLS_*): see the service kit's grpc-tls.ts.
      ...GRPC_TLS_ENV,
      // A plaintext port serving only gRPC health, for the kubelet (MH_GRPC_HEALTH_PORT): see the service kit's grpc-health-port.ts.
      ...GRPC_HEALTH_ENV,
    },
    source,
  );
}

export type CredentialProxyConfig = ReturnType<typeof loadConfig>;
