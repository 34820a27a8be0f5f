/**
 * Checks shared by every bus implementation, so a malformed call fails the same way (with
 * INVALID_ARGUMENT naming the field) in the embedded mode as against Kafka, before any I/O.
 */
import { invalidArgument } from "@metaharness/errors";
import type { BusRecord, SubscribeOptions, TopicSpec } from "./types.js";

/** Kafka's rule for topic names (and ours for group ids): 1-249 of [a-zA-Z0-9._-]. */
const NAME = /^[a-zA-Z0-9._-]{1,249}$/;

/** The most partitions ensureTopics will create for one topic. */
export const MAX_PARTITIONS = 10_000;

function checkName(field: string, name: unknown): void {
  if (typeof name !== "string" || !NAME.test(name) || name === "." || name === "..") {
    throw invalidArgument(field, "must be 1-249 characters of [a-zA-Z0-9._-], not '.' or '..'");
  }
}

export function checkRecords(records: readonly BusRecord[]): void {
  const list: unknown = records; // checked as unknown: callers may be untyped JavaScript
  if (!Array.isArray(list)) throw invalidArgument("records", "must be an array");
  records.forEach((r, i) => {
    checkName(`records[${i}].topic`, r.topic);
    if (typeof r.key !== "string") throw invalidArgument(`records[${i}].key`, "must be a string");
    if (!(r.value instanceof Uint8Array)) {
      throw invalidArgument(`records[${i}].value`, "must be a Uint8Array");
    }
    for (const [name, value] of Object.entries(r.headers)) {
      if (typeof value !== "string") {
        throw invalidArgument(`records[${i}].headers.${name}`, "must be a string");
      }
    }
  });
}

export function checkSubscribe(options: SubscribeOptions): void {
  checkName("groupId", options.groupId);
  if (options.topics.length === 0) throw invalidArgument("topics", "must name at least one topic");
  options.topics.forEach((t, i) => checkName(`topics[${i}]`, t));
  if (typeof options.handler !== "function") {
    throw invalidArgument("handler", "must be a function");
  }
}

export function checkTopicSpecs(specs: readonly TopicSpec[]): void {
  const seen = new Set<string>();
  specs.forEach((s, i) => {
    checkName(`topics[${i}].topic`, s.topic);
    if (!Number.isInteger(s.partitions) || s.partitions < 1 || s.partitions > MAX_PARTITIONS) {
      throw invalidArgument(`topics[${i}].partitions`, `must be an integer in 1..${MAX_PARTITIONS}`);
    }
    if (seen.has(s.topic)) throw invalidArgument(`topics[${i}].topic`, "is named twice");
    seen.add(s.topic);
  });
}
