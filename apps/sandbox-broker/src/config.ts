/**
 * Every setting of the sandbox broker, read from the environment in this one place. The resource
 * defaults and bounds here are what `Provision` fills a zero with and checks a request against.
 */
import { hostname } from "node:os";
import { env, readConfig, METRICS_ENV } from "@metaharness/service-kit/config";
import { GRPC_HEALTH_ENV, GRPC_TLS_ENV } from "@metaharness/service-kit/grpc";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export function loadConfig(source: NodeJS.ProcessEnv = process.env) {
  return readConfig(
    {
      host: env.string("MH_GRPC_HOST", { default: "127.0.0.1" }),
      port: env.port("MH_GRPC_PORT", { default: 15053 }),
      // postgres://... for a server; pglite:memory or pglite:///dir for embedded Postgres.
      databaseUrl: env.url("MH_DATABASE_URL", {
        default: "postgres://metaharness:metaharness@127.0.0.1:5432/metaharness",
        protocols: ["postgres", "postgresql", "pglite"],
      }),
      poolSize: env.int("MH_PG_POOL_SIZE", { default: 10, min: 2, max: 500 }),
      /**
       * "off" by default: a commit then costs no WAL flush (~2 ms here, on every claim and every
       * Provision). What the broker records only matters while its sandboxes live, and they die
       * with the broker process; a Postgres crash may lose the last ~200 ms of these records, never
       * corrupt them. The session log, the durable record, keeps synchronous commits.
       */
      pgSynchronousCommit: env.enumOf("MH_PG_SYNCHRONOUS_COMMIT", ["on", "off"], { default: "off" }),
      /**
       * Names this broker's sandboxes in Postgres and its cgroups: after a restart it marks its own
       * lost and cleans up after itself. One running broker per id.
       */
      brokerId: env.string("MH_BROKER_ID", { default: hostname(), pattern: /^[A-Za-z0-9._-]{1,64}$/ }),
      /**
       * The service tokens the broker accepts, each with its role (harness, hand, admin); see
       * auth/policy.ts. Required: whoever reaches the port could otherwise run code in any sandbox.
       */
      serviceTokensFile: env.absolutePath("MH_SERVICE_TOKENS_FILE"),
      /** Where sandbox events go; unset: nowhere (the broker works without a session log). */
      sessionLogAddr: env.optional(env.string("MH_SESSION_LOG_ADDR")),
      // This broker's service token for the session log (role broker); needed with the address.
      sessionLogTokenFile: env.optional(env.absolutePath("MH_SESSION_LOG_TOKEN_FILE")),
      /**
       * The credential vault proxy, for git repositories and ALLOWLIST egress, and the file holding
       * this broker's service token for it. Unset: Provision refuses repositories and ALLOWLIST.
       */
      credentialProxyAddr: env.optional(env.string("MH_CREDENTIAL_PROXY_ADDR")),
      credentialProxyTokenFile: env.optional(env.absolutePath("MH_CREDENTIAL_PROXY_TOKEN_FILE")),
      /** How long Provision may spend cloning each repository. */
      gitCloneTimeoutMs: env.int("MH_GIT_CLONE_TIMEOUT_MS", { default: 300_000, min: 1000, max: 3_600_000 }),
      /**
       * How long after a repository failed to clone in a sandbox AddRepositories tries it there
       * again (a host was down, a token was missing and has been added since); the wait doubles
       * after each failure, up to 32 times this.
       */
      repositoryRetryMs: env.int("MH_REPOSITORY_RETRY_MS", { default: 30_000, min: 100, max: 3_600_000 }),
      /**
       * How long a retry holds the tool call that asked for it (AddRepositories) before the call
       * goes on without the repository; the clone goes on for a later call to find.
       */
      repositoryRetryWaitMs: env.int("MH_REPOSITORY_RETRY_WAIT_MS", { default: 10_000, min: 100, max: 3_600_000 }),
      /** Bytes one request from a sandbox (a git push, an egress upload) may carry. */
      remoteMaxRequestBytes: env.int("MH_REMOTE_MAX_REQUEST_BYTES", { default: 512 * MiB, min: 1024 }),
      /** Connections a sandbox may hold open to its git and egress relays at once. */
      remoteMaxConnections: env.int("MH_REMOTE_MAX_CONNECTIONS", { default: 32, min: 1, max: 10_000 }),

      /** Absolute: the broker starts it with an empty environment, so there is no PATH to search. */
      bwrapPath: env.absolutePath("MH_BWRAP_PATH", { default: "/usr/bin/bwrap" }),
      /** cgroup directory, under each controller's mount, that holds the sandboxes' groups. */
      cgroupParent: env.string("MH_CGROUP_PARENT", { default: "metaharness", pattern: /^[A-Za-z0-9._/-]{1,200}$/ }),
      /** "auto" detects v2 then v1 then falls back to prlimit; "none" forces the fallback. */
      cgroupMode: env.enumOf("MH_CGROUP_MODE", ["auto", "v1", "v2", "none"], { default: "auto" }),

      defaultCpuMillis: env.int("MH_SANDBOX_CPU_MILLIS", { default: 1000, min: 10, max: 256_000 }),
      maxCpuMillis: env.int("MH_SANDBOX_MAX_CPU_MILLIS", { default: 4000, min: 10, max: 256_000 }),
      defaultMemoryBytes: env.int("MH_SANDBOX_MEMORY_BYTES", { default: 512 * MiB, min: 16 * MiB }),
      maxMemoryBytes: env.int("MH_SANDBOX_MAX_MEMORY_BYTES", { default: 8 * GiB, min: 16 * MiB }),
      defaultDiskBytes: env.int("MH_SANDBOX_DISK_BYTES", { default: 1 * GiB, min: MiB }),
      maxDiskBytes: env.int("MH_SANDBOX_MAX_DISK_BYTES", { default: 16 * GiB, min: MiB }),
      defaultMaxProcesses: env.int("MH_SANDBOX_MAX_PROCESSES", { default: 256, min: 8, max: 1_000_000 }),
      maxMaxProcesses: env.int("MH_SANDBOX_MAX_MAX_PROCESSES", { default: 4096, min: 8, max: 1_000_000 }),
      defaultLifetimeSeconds: env.int("MH_SANDBOX_LIFETIME_SECONDS", { default: 4 * 3600, min: 1 }),
      maxLifetimeSeconds: env.int("MH_SANDBOX_MAX_LIFETIME_SECONDS", { default: 24 * 3600, min: 1 }),
      defaultIdleTimeoutSeconds: env.int("MH_SANDBOX_IDLE_TIMEOUT_SECONDS", { default: 900, min: 1 }),
      maxIdleTimeoutSeconds: env.int("MH_SANDBOX_MAX_IDLE_TIMEOUT_SECONDS", { default: 24 * 3600, min: 1 }),
      /** Size of each sandbox's /tmp (a tmpfs, like the workspace). */
      tmpBytes: env.int("MH_SANDBOX_TMP_BYTES", { default: 64 * MiB, min: MiB }),

      callTimeoutMs: env.int("MH_CALL_TIMEOUT_MS", { default: 120_000, min: 100, max: 3_600_000 }),
      maxCallTimeoutMs: env.int("MH_MAX_CALL_TIMEOUT_MS", { default: 600_000, min: 100, max: 24 * 3_600_000 }),
      /** Output a call may return; past it the middle is cut and a marker line says so. */
      outputCapBytes: env.int("MH_OUTPUT_CAP_BYTES", { default: 100 * 1024, min: 1024, max: 8 * MiB }),
      /** What read/edit load whole (the official toolset's cap); larger files need a line range. */
      maxFileBytes: env.int("MH_MAX_FILE_BYTES", { default: 256 * 1024, min: 1024, max: 8 * MiB }),
      /** Calls at once per sandbox; more wait their turn. */
      maxConcurrentCalls: env.int("MH_MAX_CONCURRENT_CALLS", { default: 8, min: 1, max: 256 }),
      /**
       * The host uids of sandboxes when the broker is root: each running sandbox gets one of its
       * own (also its gid; inside, every sandbox is uid 65534), never one another sandbox of any
       * broker on the host holds (driver/sandbox-uids.ts). Reserve the range for sandboxes: no
       * user, service or container of the host may own an id in it (the broker refuses to start
       * when /etc/passwd or /etc/group names one). The default lies above what useradd
       * (1000-60000), systemd (61184-65519, and 524288-1879048191 for containers) and /etc/subuid
       * (100000 on, 65536 a user) usually hand out; the count bounds the sandboxes of a host.
       */
      sandboxUidBase: env.int("MH_SANDBOX_UID_BASE", { default: 1_900_000_000, min: 1000, max: 2_147_483_646 }),
      sandboxUidCount: env.int("MH_SANDBOX_UID_COUNT", { default: 65_536, min: 1, max: 1_000_000 }),
      /** Local sandboxes at once on this broker; Provision past it answers RESOURCE_EXHAUSTED. */
      maxSandboxes: env.int("MH_MAX_SANDBOXES", { default: 1000, min: 1, max: 100_000 }),
      warmPoolSize: env.int("MH_WARM_POOL_SIZE", { default: 0, min: 0, max: 1000 }),
      reapIntervalMs: env.int("MH_REAP_INTERVAL_MS", { default: 1000, min: 10, max: 60_000 }),
      /** How often the session log is asked which sessions holding a sandbox here have ended (deleted). */
      sessionCheckMs: env.int("MH_SESSION_CHECK_MS", { default: 5000, min: 100, max: 600_000 }),
      handCallTimeoutMs: env.int("MH_HAND_CALL_TIMEOUT_MS", { default: 60_000, min: 100, max: 3_600_000 }),
      /** How long a sandbox may take to answer its first frame before Provision gives up. */
      startTimeoutMs: env.int("MH_SANDBOX_START_TIMEOUT_MS", { default: 10_000, min: 100, max: 120_000 }),

      /**
       * Environment package layers (src/layers/): where they are kept (they outlive the broker
       * process and are shared by every environment with the same lists), how long one build may
       * run, how large a layer may grow, and how many build at once.
       */
      layerDir: env.absolutePath("MH_LAYER_DIR", { default: "/var/cache/metaharness/layers" }),
      layerBuildTimeoutMs: env.durationMs("MH_LAYER_BUILD_TIMEOUT_MS", { default: 15 * 60_000, min: 100, max: 6 * 3_600_000 }),
      layerMaxBytes: env.int("MH_LAYER_MAX_BYTES", { default: 4 * GiB, min: MiB }),
      layerBuildsAtOnce: env.int("MH_LAYER_BUILDS_AT_ONCE", { default: 2, min: 1, max: 64 }),

      /**
       * Workspace snapshots (src/workspaces/): where they are kept, "dir:<absolute path>" (on
       * this machine; `mh dev` keeps them in its data directory), "s3://<bucket>[/<prefix>]" (an S3-compatible store at
       * MH_WORKSPACE_S3_ENDPOINT, for brokers on several machines) or "off" (the default). With a store, every
       * tool call that changed a workspace is recorded, a sandbox lost or idle is restored at the
       * session's next call, and a session's snapshots go when the log says it ended (deleted).
       */
      workspaceStore: env.string("MH_WORKSPACE_STORE", {
        default: "off",
        pattern: /^(off|dir:\/.*|s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/[A-Za-z0-9._\/-]*)?)$/,
      }),
      workspaceS3Endpoint: env.optionalUrl("MH_WORKSPACE_S3_ENDPOINT"),
      workspaceS3Region: env.string("MH_WORKSPACE_S3_REGION", { default: "us-east-1" }),
      workspaceS3AccessKeyId: env.optional(env.string("MH_WORKSPACE_S3_ACCESS_KEY_ID")),
      workspaceS3SecretAccessKey: env.optional(env.string("MH_WORKSPACE_S3_SECRET_ACCESS_KEY", { secret: true })),
      /** One request to the store: past it the store counts as down (a tool error, never a hang). */
      workspaceStoreTimeoutMs: env.durationMs("MH_WORKSPACE_STORE_TIMEOUT_MS", { default: 5_000, min: 100, max: 600_000 }),
      /** The largest workspace a snapshot records; a larger one is refused, with its size. */
      workspaceMaxBytes: env.int("MH_WORKSPACE_MAX_BYTES", { default: 1 * GiB, min: 1024 }),
      /** How often the log is asked which sessions with snapshots ended (their snapshots then go). */
      workspaceRetentionCheckMs: env.durationMs("MH_WORKSPACE_RETENTION_CHECK_MS", { default: 60_000, min: 100, max: 24 * 3_600_000 }),

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

export type SandboxBrokerConfig = ReturnType<typeof loadConfig>;
