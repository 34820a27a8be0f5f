/**
 * ensureTopics against Kafka: create what is missing, wait until every partition has a leader,
 * and warn about existing topics whose partition count differs from the one asked for.
 *
 * We wait for leaders ourselves because kafkajs's createTopics({ waitForLeaders }) only tolerates
 * LEADER_NOT_AVAILABLE, while a KRaft broker (3.x) may answer UNKNOWN_TOPIC_OR_PARTITION for a
 * moment after creating a topic, most often just after it started. It also skips the wait
 * altogether when any topic in the request already existed, so only missing topics are sent.
 */
import kafkajs, { type Admin } from "kafkajs";
import { MhError } from "@metaharness/errors";
import type { KafkaBusConfig } from "./kafka-options.js";
import type { TopicSpec } from "./types.js";

/** Pause between metadata polls while waiting for new topics' leaders. */
const LEADER_POLL_MS = 100;

async function waitForLeaders(admin: Admin, topics: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const { topics: found } = await admin.fetchTopicMetadata({ topics });
      const ready = found.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0));
      if (ready && found.length === topics.length) return;
    } catch (err) {
      last = err; // metadata not propagated yet; poll again
    }
    if (Date.now() >= deadline) {
      throw new MhError("UNAVAILABLE", `event-bus: no leaders for ${topics.join(",")} after ${timeoutMs} ms`, {
        cause: last,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, LEADER_POLL_MS));
  }
}

export async function ensureKafkaTopics(
  admin: Admin,
  topics: readonly TopicSpec[],
  config: KafkaBusConfig,
): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((t) => !existing.has(t.topic));
  if (missing.length > 0) {
    await admin.createTopics({
      topics: missing.map((t) => ({
        topic: t.topic,
        numPartitions: t.partitions,
        ...(t.maxMessageBytes === undefined ? {} : { configEntries: [{ name: "max.message.bytes", value: String(t.maxMessageBytes) }] }),
      })),
      waitForLeaders: false,
      timeout: config.requestTimeoutMs,
    });
    config.logger.info({ topics: missing.map((t) => t.topic) }, "event-bus: created topics");
  }
  const names = topics.map((t) => t.topic);
  await waitForLeaders(admin, names, config.requestTimeoutMs);
  const { topics: found } = await admin.fetchTopicMetadata({ topics: names });
  await warnOfSmallerLimits(admin, topics.filter((t) => t.maxMessageBytes !== undefined && existing.has(t.topic)), config);
  for (const spec of topics) {
    const actual = found.find((t) => t.name === spec.topic)?.partitions.length;
    if (actual !== spec.partitions) {
      config.logger.warn(
        { topic: spec.topic, expected: spec.partitions, actual },
        "event-bus: topic exists with a different partition count; keys map to other partitions",
      );
    }
  }
}

/** Topics made before with a lower max.message.bytes refuse the largest records: say so. */
async function warnOfSmallerLimits(admin: Admin, topics: readonly TopicSpec[], config: KafkaBusConfig): Promise<void> {
  if (topics.length === 0) return;
  let resources: Awaited<ReturnType<Admin["describeConfigs"]>>["resources"];
  try {
    ({ resources } = await admin.describeConfigs({
      resources: topics.map((t) => ({ type: kafkajs.ConfigResourceTypes.TOPIC, name: t.topic, configNames: ["max.message.bytes"] })),
      includeSynonyms: false,
    }));
  } catch (err) {
    // Only a warning depends on it (a cluster may refuse DescribeConfigs to this principal).
    config.logger.warn({ err, topics: topics.map((t) => t.topic) }, "event-bus: could not read the topics' max.message.bytes");
    return;
  }
  for (const spec of topics) {
    const value = resources.find((r) => r.resourceName === spec.topic)?.configEntries.find((e) => e.configName === "max.message.bytes")?.configValue;
    if (value !== undefined && spec.maxMessageBytes !== undefined && Number(value) < spec.maxMessageBytes) {
      config.logger.warn(
        { topic: spec.topic, max_message_bytes: Number(value), wanted: spec.maxMessageBytes },
        "event-bus: topic takes smaller records than wanted; raise its max.message.bytes or the largest events cannot be published",
      );
    }
  }
}
