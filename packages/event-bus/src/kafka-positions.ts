/**
 * Makes fromBeginning: false mean "the end of the log as of subscribe()", as in the memory bus.
 * Left to kafkajs, a partition with no committed offset starts at the end as of the consumer's
 * first fetch, which comes after subscribe() resolves: a record published right after subscribe()
 * was skipped nearly every time we measured. So before joining we read, for the partitions this
 * group has never committed, the current end offsets; on the first join the consumer seeks its
 * assigned partitions there (kafkajs applies a seek before resolving offsets, and commits it).
 */
import type { Consumer, IMemberAssignment, Kafka } from "kafkajs";
import type { KafkaBusConfig } from "./kafka-options.js";

/** topic -> partition -> end offset, for partitions without a committed offset. */
export type StartPositions = ReadonlyMap<string, ReadonlyMap<number, string>>;

/** Kafka's "no committed offset" marker in an OffsetFetch response. */
const NONE = "-1";

export async function endPositions(
  kafka: Kafka,
  config: KafkaBusConfig,
  groupId: string,
  topics: readonly string[],
): Promise<StartPositions> {
  const admin = kafka.admin({ retry: config.retry });
  try {
    await admin.connect();
    const out = new Map<string, Map<number, string>>();
    for (const { topic, partitions } of await admin.fetchOffsets({ groupId, topics: [...topics] })) {
      const fresh = partitions.filter((p) => p.offset === NONE).map((p) => p.partition);
      if (fresh.length === 0) continue;
      const ends = await admin.fetchTopicOffsets(topic);
      const byPartition = new Map(ends.map((e) => [e.partition, e.high]));
      out.set(topic, new Map(fresh.flatMap((p) => (byPartition.has(p) ? [[p, byPartition.get(p) ?? ""]] : []))));
    }
    return out;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** Seeks the assigned partitions that have a start position; call from the first GROUP_JOIN. */
export function seekToStart(consumer: Consumer, assignment: IMemberAssignment, positions: StartPositions): void {
  for (const [topic, partitions] of Object.entries(assignment)) {
    for (const partition of partitions) {
      const offset = positions.get(topic)?.get(partition);
      if (offset !== undefined) consumer.seek({ topic, partition, offset });
    }
  }
}
