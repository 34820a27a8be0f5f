/**
 * Kafka headers are bytes and may repeat a key; our records carry string headers. Encoding is the
 * identity (kafkajs writes strings as utf-8); decoding keeps the last value of a repeated key,
 * as Java's Headers#lastHeader does, and skips null values.
 */
import type { IHeaders } from "kafkajs";

export function decodeHeaders(headers: IHeaders | undefined): Record<string, string> {
  if (headers === undefined) return {};
  const pairs: Array<[string, string]> = [];
  for (const [name, raw] of Object.entries(headers)) {
    const value = Array.isArray(raw) ? raw[raw.length - 1] : raw;
    if (value == null) continue;
    pairs.push([name, typeof value === "string" ? value : value.toString("utf8")]);
  }
  // fromEntries defines properties, so a header named "__proto__" stays a plain key.
  return Object.fromEntries(pairs);
}
