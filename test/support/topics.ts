/**
 * The real Kafka broker the tests use, and deleting the topics they create: every test run makes
 * fresh topics, and a developer's broker that keeps them all grows slower with each run (hundreds
 * of partitions to load at start and to tend).
 */
import kafkajs from "kafkajs";

export const KAFKA_BROKERS = process.env["MH_KAFKA_BROKERS"] ?? "127.0.0.1:9092";

/** Deletes `topic` if it exists; best effort: a leftover topic only costs the local broker. */
export async function deleteTopic(topic: string): Promise<void> {
  const kafka = new kafkajs.Kafka({
    clientId: "test-cleanup",
    brokers: KAFKA_BROKERS.split(","),
    logLevel: kafkajs.logLevel.NOTHING,
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    const topics = await admin.listTopics();
    if (topics.includes(topic)) await admin.deleteTopics({ topics: [topic], timeout: 10_000 });
  } catch {
    // Best effort, as above.
  } finally {
    await admin.disconnect();
  }
}

/** A consumer group as the broker describes it: its state and its members' client ids, sorted. */
export async function describeGroup(groupId: string): Promise<{ state: string; clients: string[] }> {
  const kafka = new kafkajs.Kafka({ clientId: "test-describe", brokers: KAFKA_BROKERS.split(","), logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  try {
    await admin.connect();
    const { groups } = await admin.describeGroups([groupId]);
    const group = groups[0];
    return { state: group?.state ?? "Dead", clients: (group?.members ?? []).map((m) => m.clientId).sort() };
  } finally {
    await admin.disconnect();
  }
}
