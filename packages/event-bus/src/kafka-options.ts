/**
 * The Kafka bus's options in two stages: what a caller may pass (KafkaBusOptions) and the checked,
 * defaulted values the implementation uses. Every wait and retry has a named, documented bound,
 * and kafkajs's own defaults are never relied on (they change under NODE_ENV=test).
 */
import { invalidArgument } from "@metaharness/errors";
import { silentLogger } from "./silent-logger.js";
import type { BusLogger } from "./types.js";

export interface BusRetryOptions {
  /** Attempts after the first; default 5. */
  readonly retries?: number;
  /** First backoff; doubles (with 20% jitter) per attempt. Default 300 ms. */
  readonly initialRetryTimeMs?: number;
  /** Cap on one backoff; default 30 000 ms. */
  readonly maxRetryTimeMs?: number;
}

/** TLS to the brokers: their certificate is checked against `ca`, or the system's roots without it. */
export interface KafkaTls {
  /** The roots to trust (PEM). */
  readonly ca?: Buffer;
  /** This client's certificate chain and key (PEM), for brokers that ask for one (ssl.client.auth). */
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

export type KafkaSaslMechanism = "plain" | "scram-sha-256" | "scram-sha-512";

/** SASL authentication to the brokers (their listener is SASL_SSL or SASL_PLAINTEXT). */
export interface KafkaSasl {
  readonly mechanism: KafkaSaslMechanism;
  readonly username: string;
  readonly password: string;
}

export interface KafkaBusOptions {
  /** Bootstrap brokers, "host:port". */
  readonly brokers: readonly string[];
  readonly clientId: string;
  /** TLS to every broker; plaintext without it. */
  readonly tls?: KafkaTls;
  /** SASL on every connection; PLAIN only together with `tls`, as it sends the password as is. */
  readonly sasl?: KafkaSasl;
  /** Where kafkajs's warnings and errors and the bus's own events go; silent by default. */
  readonly logger?: BusLogger;
  /** TCP connect timeout per broker; default 3 000 ms. */
  readonly connectionTimeoutMs?: number;
  /** Timeout for one request to a broker; default 30 000 ms. */
  readonly requestTimeoutMs?: number;
  /** Retry policy for connecting, producing and consuming. */
  readonly retry?: BusRetryOptions;
  /** Most records sent in one produce request; a larger publish is split. Default 500. */
  readonly maxBatchRecords?: number;
  /**
   * Most bytes (keys, values, headers) sent in one produce request; a larger publish is split,
   * a record larger than this goes alone. Kafka refuses a partition's batch over the topic's
   * max.message.bytes (1 MiB by default) whole, and kafkajs does not split by size. Default 768 KiB.
   */
  readonly maxBatchBytes?: number;
  /** How long subscribe() waits for the consumer to join its group; default 30 000 ms. */
  readonly joinTimeoutMs?: number;
  /**
   * How long the group coordinator waits for a silent member (one killed with -9) before it
   * drops it; until then a rebalance, and so every join, waits for it. The brokers allow
   * group.min.session.timeout.ms (6 000 by default) and up. Default KAFKA_DEFAULTS.sessionTimeoutMs.
   */
  readonly sessionTimeoutMs?: number;
  /** How long a rebalance waits for the live members to join again; default KAFKA_DEFAULTS.rebalanceTimeoutMs. */
  readonly rebalanceTimeoutMs?: number;
  /**
   * Most a consumer's close() waits for kafkajs to leave the group: a leave in the middle of a
   * rebalance waits for the rebalance (kafkajs's JoinGroup can take the rebalance timeout), and a
   * shutdown must not. Past it the member is dropped by the coordinator after the session
   * timeout instead. Default 2 000 ms.
   */
  readonly closeTimeoutMs?: number;
}

export interface KafkaBusConfig {
  readonly brokers: string[];
  readonly clientId: string;
  readonly tls: KafkaTls | undefined;
  readonly sasl: KafkaSasl | undefined;
  readonly logger: BusLogger;
  readonly connectionTimeoutMs: number;
  readonly requestTimeoutMs: number;
  /** In kafkajs's terms, every field set so its (NODE_ENV-dependent) defaults never apply. */
  readonly retry: {
    retries: number;
    initialRetryTime: number;
    maxRetryTime: number;
    factor: number;
    multiplier: number;
  };
  readonly maxBatchRecords: number;
  readonly maxBatchBytes: number;
  readonly joinTimeoutMs: number;
  readonly sessionTimeoutMs: number;
  readonly rebalanceTimeoutMs: number;
  readonly closeTimeoutMs: number;
}

export const KAFKA_DEFAULTS = {
  connectionTimeoutMs: 3_000,
  requestTimeoutMs: 30_000,
  retries: 5,
  initialRetryTimeMs: 300,
  maxRetryTimeMs: 30_000,
  maxBatchRecords: 500,
  maxBatchBytes: 768 * 1024,
  joinTimeoutMs: 30_000,
  sessionTimeoutMs: 6_000,
  rebalanceTimeoutMs: 6_000,
  closeTimeoutMs: 2_000,
} as const;

function positiveInt(field: string, value: number | undefined, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min) {
    throw invalidArgument(field, `must be an integer >= ${min}`);
  }
  return value;
}

const BROKER = /^[^\s:]+:\d{1,5}$/;

export function withDefaults(options: KafkaBusOptions): KafkaBusConfig {
  if (options.brokers.length === 0) throw invalidArgument("brokers", "must name at least one broker");
  options.brokers.forEach((b, i) => {
    if (!BROKER.test(b)) throw invalidArgument(`brokers[${i}]`, "must be host:port");
  });
  if (options.clientId.trim() === "") throw invalidArgument("clientId", "must not be empty");
  checkSecurity(options);
  const retry = options.retry ?? {};
  const d = KAFKA_DEFAULTS;
  return {
    brokers: [...options.brokers],
    clientId: options.clientId,
    tls: options.tls,
    sasl: options.sasl,
    logger: options.logger ?? silentLogger,
    connectionTimeoutMs: positiveInt("connectionTimeoutMs", options.connectionTimeoutMs, d.connectionTimeoutMs),
    requestTimeoutMs: positiveInt("requestTimeoutMs", options.requestTimeoutMs, d.requestTimeoutMs),
    retry: {
      retries: positiveInt("retry.retries", retry.retries, d.retries, 0),
      initialRetryTime: positiveInt("retry.initialRetryTimeMs", retry.initialRetryTimeMs, d.initialRetryTimeMs),
      maxRetryTime: positiveInt("retry.maxRetryTimeMs", retry.maxRetryTimeMs, d.maxRetryTimeMs),
      factor: 0.2,
      multiplier: 2,
    },
    maxBatchRecords: positiveInt("maxBatchRecords", options.maxBatchRecords, d.maxBatchRecords),
    maxBatchBytes: positiveInt("maxBatchBytes", options.maxBatchBytes, d.maxBatchBytes),
    joinTimeoutMs: positiveInt("joinTimeoutMs", options.joinTimeoutMs, d.joinTimeoutMs),
    // Above two heartbeats (1 s apart, kafka-consumer.ts); brokers refuse less than their minimum anyway.
    sessionTimeoutMs: positiveInt("sessionTimeoutMs", options.sessionTimeoutMs, d.sessionTimeoutMs, 2_000),
    rebalanceTimeoutMs: positiveInt("rebalanceTimeoutMs", options.rebalanceTimeoutMs, d.rebalanceTimeoutMs),
    closeTimeoutMs: positiveInt("closeTimeoutMs", options.closeTimeoutMs, d.closeTimeoutMs),
  };
}

const MECHANISMS: readonly string[] = ["plain", "scram-sha-256", "scram-sha-512"] satisfies KafkaSaslMechanism[];

function checkSecurity({ tls, sasl }: KafkaBusOptions): void {
  if (tls !== undefined && (tls.cert === undefined) !== (tls.key === undefined)) {
    throw invalidArgument(tls.cert === undefined ? "tls.cert" : "tls.key", "a certificate and its key go together");
  }
  if (sasl === undefined) return;
  if (!MECHANISMS.includes(sasl.mechanism)) throw invalidArgument("sasl.mechanism", `must be one of ${MECHANISMS.join(", ")}`);
  if (sasl.username === "") throw invalidArgument("sasl.username", "must not be empty");
  if (sasl.password === "") throw invalidArgument("sasl.password", "must not be empty");
  if (sasl.mechanism === "plain" && tls === undefined) {
    throw invalidArgument("sasl.mechanism", "PLAIN sends the password as is: use it over TLS, or a SCRAM mechanism");
  }
}
