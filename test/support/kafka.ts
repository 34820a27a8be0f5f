/**
 * Reads what a real Kafka consumer receives on a topic, decoded as our events: over the tests'
 * plaintext listener, or as a service set up with `via` would (MH_KAFKA_BROKERS and the
 * MH_KAFKA_TLS* / MH_KAFKA_SASL_* settings, e.g. from kafka-secure.ts).
 */
import { randomBytes } from "node:crypto";
import { createKafkaBus, KAFKA_SECURITY_ENV, loadKafkaSecurity, type BusConsumer, type EventBus } from "@metaharness/event-bus";
import { env, readConfig } from "@metaharness/service-kit/config";
import { Event } from "@metaharness/proto";
import { KAFKA_BROKERS } from "./topics.js";
import { SESSION_EVENTS_MAX_MESSAGE_BYTES } from "@metaharness/events";

const envList = (name: string, fallback: string) => env.list(name, { default: fallback.split(",") });

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

export async function readTopic(topic: string, via: Record<string, string> = {}): Promise<TopicReader> {
  const settings = readConfig({ brokers: envList("MH_KAFKA_BROKERS", KAFKA_BROKERS), ...KAFKA_SECURITY_ENV }, via);
  const bus: EventBus = createKafkaBus({ brokers: settings.brokers, clientId: "test-reader", ...(await loadKafkaSecurity(settings)) });
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
