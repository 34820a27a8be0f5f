/**
 * Every setting of the session-log service, read from the environment in this one place.
 */
import { env, readConfig, METRICS_ENV } from "@metaharness/service-kit/config";
import { GRPC_HEALTH_ENV, GRPC_TLS_ENV, MAX_EVENT_BYTES } from "@metaharness/service-kit/grpc";
import { KAFKA_SECURITY_ENV } from "@metaharness/event-bus";
import { SESSION_EVENTS_TOPIC } from "@metaharness/events";


export function loadConfig(source: NodeJS.ProcessEnv = process.env) {
  return readConfig(
    {
      host: env.string("MH_GRPC_HOST", { default: "127.0.0.1" }),
      port: env.port("MH_GRPC_PORT", { default: 15051 }),
      // postgres://... for a server; pglite:memory or pglite:///dir for embedded Postgres.
      databaseUrl: env.url("MH_DATABASE_URL", {
        default: "postgres://metaharness:metaharness@127.0.0.1:5432/metaharness",
        protocols: ["postgres", "postgresql", "pglite"],
      }),
      /**
       * The service tokens it accepts, each with its role (admin, harness, broker, proxy); see
       * auth/policy.ts. Required: the log holds every session's whole history.
       */
      serviceTokensFile: env.absolutePath("MH_SERVICE_TOKENS_FILE"),
      poolSize: env.int("MH_PG_POOL_SIZE", { default: 20, min: 2, max: 500 }),
      maxPayloadBytes: env.int("MH_MAX_PAYLOAD_BYTES", { default: 1024 * 1024, min: 1024, max: MAX_EVENT_BYTES }),
      watchRecheckMs: env.int("MH_WATCH_RECHECK_MS", { default: 5000, min: 100, max: 600_000 }),
      // Appends waiting for a batch beyond this are refused (RESOURCE_EXHAUSTED, retried by the
      // harness) rather than queued without bound in the service's memory.
      appendMaxQueued: env.int("MH_APPEND_MAX_QUEUED", { default: 10_000, min: 1, max: 1_000_000 }),
      kafkaBrokers: env.list("MH_KAFKA_BROKERS", { default: ["127.0.0.1:9092"] }),
      topic: env.string("MH_KAFKA_TOPIC", { default: SESSION_EVENTS_TOPIC }),
      topicPartitions: env.int("MH_KAFKA_TOPIC_PARTITIONS", { default: 12, min: 1, max: 1000 }),
      // TLS and SASL to Kafka (MH_KAFKA_TLS*, MH_KAFKA_SASL_*): see the event bus's kafka-security.ts.
      ...KAFKA_SECURITY_ENV,
      relayEnabled: env.bool("MH_RELAY_ENABLED", { default: true }),
      relayBatchSize: env.int("MH_RELAY_BATCH_SIZE", { default: 500, min: 1, max: 10_000 }),
      relayPollMs: env.int("MH_RELAY_POLL_MS", { default: 500, min: 10, max: 60_000 }),
      // The least time between two drains: appends arriving meanwhile ride one produce. A drain
      // costs a statement and a produce (about 1 ms of the log's, Postgres's and Kafka's CPU):
      // at 10 ms one ran per text-only turn at 16 sessions, at 50 ms 0.4. An append after a
      // quiet spell is drained at once; under load an event reaches Kafka up to this much later.
      relayLingerMs: env.int("MH_RELAY_LINGER_MS", { default: 50, min: 0, max: 1000 }),
      relayRebalanceMs: env.int("MH_RELAY_REBALANCE_MS", { default: 5000, min: 100, max: 600_000 }),
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

export type SessionLogConfig = ReturnType<typeof loadConfig>;
