/**
 * What the attack suite collects to scan afterwards: every log line of every service
 * (support/log-capture.ts), every record of the session-events topic as
 * Kafka delivers it (raw bytes, key and headers), and every span the process exported.
 */
import { randomBytes } from "node:crypto";
import { createKafkaBus, type BusConsumer } from "@metaharness/event-bus";
import type { ReadableSpan } from "@metaharness/telemetry";
import { KAFKA_BROKERS } from "../support/topics.js";

export interface KafkaRecord {
  readonly key: string;
  readonly value: Buffer;
  readonly headers: Record<string, string>;
}

export interface TopicCapture {
  readonly records: KafkaRecord[];
  close(): Promise<void>;
}

export async function captureTopic(topic: string): Promise<TopicCapture> {
  const bus = createKafkaBus({ brokers: KAFKA_BROKERS.split(","), clientId: "security-reader" });
  const records: KafkaRecord[] = [];
  let consumer: BusConsumer;
  try {
    await bus.ensureTopics([{ topic, partitions: 3 }]);
    consumer = await bus.subscribe({
      groupId: `security-${randomBytes(4).toString("hex")}`,
      topics: [topic],
      fromBeginning: true,
      handler: (msg) => {
        records.push({ key: msg.key, value: Buffer.from(msg.value), headers: msg.headers });
        return Promise.resolve();
      },
    });
  } catch (err) {
    await bus.close();
    throw err;
  }
  return {
    records,
    close: async () => {
      await consumer.close();
      await bus.close();
    },
  };
}

/** A span as text: everything an exporter would send (name, attributes, events, status, links, resource). */
export function spanText(span: ReadableSpan): string {
  return JSON.stringify({
    name: span.name,
    attributes: span.attributes,
    events: span.events.map((e) => ({ name: e.name, attributes: e.attributes })),
    status: span.status,
    links: span.links.map((l) => l.attributes),
    resource: span.resource.attributes,
  });
}
