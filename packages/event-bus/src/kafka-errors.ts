/**
 * Turns whatever kafkajs throws into an MhError. Most failures mean "the broker could not be
 * reached or did not answer in the retry budget" and become UNAVAILABLE (retryable); the few that
 * retrying cannot fix get their own code. kafkajs's error classes are not ESM named exports (its
 * index spreads them), so errors are recognised by their `name` and protocol `type` fields.
 */
import { KafkaErrorNames, MhError, type CodeName } from "@metaharness/errors";

/** Kafka protocol error types (kafkajs `type`) that a retry will not fix. */
const TERMINAL: Readonly<Record<string, CodeName>> = {
  UNKNOWN_TOPIC_OR_PARTITION: "NOT_FOUND",
  MESSAGE_TOO_LARGE: "INVALID_ARGUMENT",
  RECORD_LIST_TOO_LARGE: "INVALID_ARGUMENT",
  INVALID_TOPIC_EXCEPTION: "INVALID_ARGUMENT",
  INVALID_PARTITIONS: "INVALID_ARGUMENT",
  INVALID_REPLICATION_FACTOR: "INVALID_ARGUMENT",
  TOPIC_AUTHORIZATION_FAILED: "PERMISSION_DENIED",
  GROUP_AUTHORIZATION_FAILED: "PERMISSION_DENIED",
  CLUSTER_AUTHORIZATION_FAILED: "PERMISSION_DENIED",
};

function field(err: unknown, name: string): unknown {
  return typeof err === "object" && err !== null ? (err as Record<string, unknown>)[name] : undefined;
}

/** The protocol error types found along the cause chain and inside aggregate errors. */
function protocolTypes(err: unknown, depth = 0): string[] {
  if (depth > 8 || typeof err !== "object" || err === null) return [];
  const type = field(err, "type");
  const own = typeof type === "string" ? [type] : [];
  const inner = field(err, "errors");
  const nested = Array.isArray(inner) ? inner.flatMap((e) => protocolTypes(e, depth + 1)) : [];
  return [...own, ...nested, ...protocolTypes(field(err, "cause"), depth + 1)];
}

/** `action` says what failed, in the caller's words: "publish", "connect the publisher". */
export function toMhError(err: unknown, action: string): MhError {
  if (err instanceof MhError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const types = protocolTypes(err);
  const terminal = types.map((t) => TERMINAL[t]).find((c) => c !== undefined);
  const code: CodeName =
    terminal ?? (field(err, "name") === "KafkaJSSASLAuthenticationError" ? "UNAUTHENTICATED" : "UNAVAILABLE");
  const details = types.length > 0 ? KafkaErrorNames.of({ kafka_error: types.join(",") }) : {};
  return new MhError(code, `kafka: ${action} failed: ${message}`, { cause: err, details });
}
