/**
 * Every setting of the harness, read from the environment in this one place.
 */
import { env, readConfig, METRICS_ENV } from "@metaharness/service-kit/config";
import { GRPC_HEALTH_ENV, GRPC_TLS_ENV } from "@metaharness/service-kit/grpc";
import { KAFKA_SECURITY_ENV } from "@metaharness/event-bus";
import { SESSION_EVENTS_TOPIC } from "@metaharness/events";

export function loadConfig(source: NodeJS.ProcessEnv = process.env) {
  return readConfig(
    {
      host: env.string("MH_GRPC_HOST", { default: "127.0.0.1" }),
      port: env.port("MH_GRPC_PORT", { default: 15052 }),
      instanceId: env.optional(env.string("MH_INSTANCE_ID")),
      // The service tokens its gRPC API (Wake, ListActive) accepts: admins only (the gateway, an operator).
      serviceTokensFile: env.absolutePath("MH_SERVICE_TOKENS_FILE"),
      sessionLogAddress: env.string("MH_SESSION_LOG_ADDR", { default: "127.0.0.1:15051" }),
      // This harness's service token for the session log (role harness).
      sessionLogTokenFile: env.absolutePath("MH_SESSION_LOG_TOKEN_FILE"),
      brokerAddress: env.optional(env.string("MH_SANDBOX_BROKER_ADDR")),
      // This harness's service token for the broker (not the one it shows the proxy).
      brokerTokenFile: env.optional(env.absolutePath("MH_SANDBOX_BROKER_TOKEN_FILE")),
      // The credential vault proxy (MCP tools) and the file holding this harness's service token for it.
      credentialProxyAddress: env.optional(env.string("MH_CREDENTIAL_PROXY_ADDR")),
      credentialProxyTokenFile: env.optional(env.absolutePath("MH_CREDENTIAL_PROXY_TOKEN_FILE")),
      modelBaseUrl: env.optionalUrl("MH_MODEL_BASE_URL", { protocols: ["http", "https"] }),
      modelApiKey: env.string("ANTHROPIC_API_KEY", { default: "offline", secret: true }),
      model: env.string("MH_MODEL", { default: "claude-sonnet-5-5" }),
      maxTokens: env.int("MH_MAX_TOKENS", { default: 8192, min: 1, max: 128_000 }),
      modelMaxAttempts: env.int("MH_MODEL_MAX_ATTEMPTS", { default: 5, min: 1, max: 20 }),
      modelRetryInitialMs: env.int("MH_MODEL_RETRY_INITIAL_MS", { default: 500, min: 1, max: 60_000 }),
      // How long a lease outlives its holder's last renewal: a harness that dies frees its leases at
      // once through its line to the log (HoldLeases), so this is the wait only for one that hangs or
      // is cut off. Chosen by test/bench/recovery.ts (docs/performance.md): 1 s cost 8 leases lost by
      // live harnesses in a run at load 20, 3 s none in any run, and recovery no longer depends on it.
      leaseTtlMs: env.int("MH_LEASE_TTL_MS", { default: 3000, min: 500, max: 600_000 }),
      // How long a woken brain keeps a session after its turn ends (its lease, set by the turn's
      // last append to run out with the linger; its events; its follow of the log), so that the
      // session's next input starts the next turn at once: no lease to take, no read, no new follow.
      // 0: the lease goes back at every idle. A lingering session costs its events in memory, and
      // a renewal per TTL / 3 only for a linger longer than the lease; the default is chosen in
      // docs/harness.md ("Keeping a session after its turn").
      idleLingerMs: env.durationMs("MH_IDLE_LINGER_MS", { default: 2000, min: 0, max: 600_000 }),
      // The coupled configuration, to measure the container-per-session design against ours
      // (test/bench/ttft-sweep.ts): before a session's first model call, provision its sandbox as
      // its first tool call would (the environment's package layer, built first if it must be; its
      // repositories cloned through the credential proxy; the sandbox's tool process started), and
      // only then call the model. Off (decoupled, the default): the sandbox waits for a tool call.
      eagerSandbox: env.bool("MH_EAGER_SANDBOX", { default: false }),
      // Self-hosted environments: how long a tool call waits for the environment's worker to answer.
      workerToolTimeoutMs: env.durationMs("MH_WORKER_TOOL_TIMEOUT_MS", { default: 10 * 60_000, min: 1000, max: 24 * 3_600_000 }),
      // The fallback for a freed session nobody heard of (the log's news on the line is the first
      // way): chosen by test/bench/recovery.ts (docs/performance.md), 500 ms recovered as fast as
      // 100 ms (kill -9 -> next event p50 596 ms, p99 1.8 s) for a fifth of the ListSessions calls.
      sweepMs: env.int("MH_SWEEP_MS", { default: 500, min: 50, max: 600_000 }),
      // Wake at once the sessions the log says lost their holder (HoldLeases: it died, or gave them
      // back mid-turn). Off only where a test chooses which instance drives what.
      wakeFreed: env.bool("MH_WAKE_FREED", { default: true }),
      kafkaWake: env.bool("MH_KAFKA_WAKE", { default: false }),
      kafkaBrokers: env.list("MH_KAFKA_BROKERS", { default: ["127.0.0.1:9092"] }),
      topic: env.string("MH_KAFKA_TOPIC", { default: SESSION_EVENTS_TOPIC }),
      // Used only if the topic does not exist yet; the session log creates it the same way.
      topicPartitions: env.int("MH_KAFKA_TOPIC_PARTITIONS", { default: 12, min: 1, max: 1000 }),
      consumerGroup: env.string("MH_KAFKA_GROUP", { default: "metaharness-harness" }),
      // A harness killed with -9 holds every join of the group until this drops it (the broker's
      // group.min.session.timeout.ms, 6 s by default, is the least it takes); test/bench/recovery.ts measures it.
      kafkaSessionTimeoutMs: env.durationMs("MH_KAFKA_SESSION_TIMEOUT_MS", { default: 6000, min: 2000, max: 300_000 }),
      // How long a rebalance waits for the live harnesses to join again.
      kafkaRebalanceTimeoutMs: env.durationMs("MH_KAFKA_REBALANCE_TIMEOUT_MS", { default: 6000, min: 1000, max: 300_000 }),
      // TLS and SASL to Kafka (MH_KAFKA_TLS*, MH_KAFKA_SASL_*): see the event bus's kafka-security.ts.
      ...KAFKA_SECURITY_ENV,
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

export type HarnessConfig = ReturnType<typeof loadConfig>;
