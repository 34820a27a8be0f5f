/**
 * Reads what a real Kafka consumer receives on a topic, decoded as our events.
 */
import { randomBytes } from "node:crypto";
import { createKafkaBus, type BusConsumer, type EventBus } from "@metaharness/event-bus";
import { Event } from "@metaharness/proto";
import { KAFKA_BROKERS } from "./topics.js";
import { SESSION_EVENTS_MAX_MESSAGE_BYTES } from "@metaharness/events";

export interface Received {
  readonly event: Event;
  readonly key: string;
  readonly headers: Record<string, string>;
  readonly partition: number;
  readonly receivedAt: number;
}

export interface TopicReader {
  readonly received: Received[];
  /** Resolves when `predicate` holds for what was received, or rejects after `timeoutMs`. */
  waitFor(predicate: (r: Received[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function readTopic(topic: string): Promise<TopicReader> {
  const bus: EventBus = createKafkaBus({ brokers: KAFKA_BROKERS.split(","), clientId: "test-reader" });
  const received: Received[] = [];
  let notify: (() => void) | undefined;
  let consumer: BusConsumer | undefined;
  try {
    // As the services create it (the first one to start does), so either may come first.
    await bus.ensureTopics([{ topic, partitions: 3, maxMessageBytes: SESSION_EVENTS_MAX_MESSAGE_BYTES }]);
    consumer = await bus.subscribe({
      groupId: `test-${randomBytes(4).toString("hex")}`,
      topics: [topic],
      fromBeginning: true,
      handler: async (msg) => {
        received.push({
          event: Event.decode(msg.value),
          key: msg.key,
          headers: msg.headers,
          partition: msg.partition,
          receivedAt: Date.now(),
        });
        notify?.();
        return Promise.resolve();
      },
    });
  } catch (err) {
    await bus.close();
    throw err;
  }
  const active = consumer;
  return {
    received,
    async waitFor(predicate, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(received)) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms with ${received.length} records received`);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.min(left, 500));
          notify = () => {
            clearTimeout(t);
            resolve();
          };
        });
      }
    },
    async close() {
      await active.close();
      await bus.close();
    },
  };
}
