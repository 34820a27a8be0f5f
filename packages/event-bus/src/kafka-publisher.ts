/**
 * BusPublisher over a kafkajs idempotent producer. Order per key rests on three things: one
 * publish at a time (calls queue in call order), at most one in-flight request per broker, and the
 * idempotent producer's sequence numbers, which let the broker drop a retried duplicate.
 *
 * kafkajs gives an idempotent producer unlimited retries by default, so a lost broker would make
 * publish hang forever. We bound them instead, and after any failed send we start a new producer
 * session (a new producer id) so stale sequence numbers can't wedge later publishes.
 */
import type { Kafka, Message, Producer, TopicMessages } from "kafkajs";
import { MhError } from "@metaharness/errors";
import { toMhError } from "./kafka-errors.js";
import type { KafkaBusConfig } from "./kafka-options.js";
import type { BusPublisher, BusRecord } from "./types.js";
import { checkRecords } from "./validate.js";
import { keyPartitioner } from "./kafka-partitioner.js";

/** acks=all: the leader waits for the full in-sync replica set. */
const ACKS_ALL = -1;

function toMessage(record: BusRecord): Message {
  const v = record.value;
  return {
    key: record.key,
    value: Buffer.from(v.buffer, v.byteOffset, v.byteLength),
    headers: { ...record.headers },
  };
}

/** Groups one chunk by topic, keeping the given order within each topic (and so each key). */
function byTopic(records: readonly BusRecord[]): TopicMessages[] {
  const topics = new Map<string, Message[]>();
  for (const r of records) {
    let messages = topics.get(r.topic);
    if (messages === undefined) topics.set(r.topic, (messages = []));
    messages.push(toMessage(r));
  }
  return [...topics].map(([topic, messages]) => ({ topic, messages }));
}

export class KafkaPublisher implements BusPublisher {
  /** The current producer session; undefined after a failure until the next publish. */
  private producer: Producer | undefined;
  /** The end of the queue of publishes; never rejects. */
  private tail: Promise<void> = Promise.resolve();
  private closing: Promise<void> | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly config: KafkaBusConfig,
    private readonly onClosed: () => void,
  ) {}

  /** Starts the first producer session; rejects (UNAVAILABLE) if the broker can't be reached. */
  async connect(): Promise<void> {
    const producer = await this.startSession();
    if (this.closing !== undefined) {
      // close() ran while we were connecting and had no producer to disconnect.
      await producer.disconnect().catch(() => undefined);
      throw new MhError("FAILED_PRECONDITION", "event-bus: publisher closed while connecting");
    }
    this.producer = producer;
  }

  /** Async only for its rejections: the publish is queued synchronously, so in call order. */
  async publish(records: readonly BusRecord[]): Promise<void> {
    if (this.closing !== undefined) {
      throw new MhError("FAILED_PRECONDITION", "event-bus: publisher is closed");
    }
    checkRecords(records);
    if (records.length === 0) return;
    const run = this.tail.then(() => this.send(records));
    this.tail = run.catch(() => undefined);
    return run;
  }

  close(): Promise<void> {
    this.closing ??= this.tail.then(async () => {
      const producer = this.producer;
      this.producer = undefined;
      await producer?.disconnect().catch((err: unknown) => {
        this.config.logger.warn({ err }, "event-bus: producer disconnect failed");
      });
      this.onClosed();
    });
    return this.closing;
  }

  private async send(records: readonly BusRecord[]): Promise<void> {
    const producer = this.producer ?? (this.producer = await this.startSession());
    try {
      for (const chunk of chunks(records, this.config.maxBatchRecords, this.config.maxBatchBytes)) {
        await producer.sendBatch({ acks: ACKS_ALL, timeout: this.config.requestTimeoutMs, topicMessages: byTopic(chunk) });
      }
    } catch (err) {
      const error = toMhError(err, "publish");
      this.config.logger.warn(
        { err: error, records: records.length },
        "event-bus: publish failed; the next publish starts a new producer session",
      );
      this.producer = undefined;
      await producer.disconnect().catch(() => undefined);
      throw error;
    }
  }

  private async startSession(): Promise<Producer> {
    const { retry } = this.config;
    const producer = this.kafka.producer({
      // murmur2 over the key, as Java clients and kafkajs's DefaultPartitioner hash it, without
      // its Long arithmetic (kafka-partitioner.ts); naming one also silences kafkajs's v2 warning.
      createPartitioner: keyPartitioner,
      idempotent: true,
      maxInFlightRequests: 1,
      // Topics are created by ensureTopics with a chosen partition count, never implicitly.
      allowAutoTopicCreation: false,
      // An idempotent producer needs at least one retry (kafkajs refuses zero).
      retry: { ...retry, retries: Math.max(1, retry.retries) },
    });
    try {
      await producer.connect();
      return producer;
    } catch (err) {
      await producer.disconnect().catch(() => undefined);
      throw toMhError(err, "connect the publisher");
    }
  }
}

/** What a record weighs in a produce request, near enough: key, value, headers. */
function recordBytes(r: BusRecord): number {
  let size = Buffer.byteLength(r.key) + r.value.length;
  for (const [k, v] of Object.entries(r.headers)) size += Buffer.byteLength(k) + Buffer.byteLength(v);
  return size;
}

/** `records` in order, in runs of at most `maxRecords` and `maxBytes` (a bigger record alone). */
export function chunks(records: readonly BusRecord[], maxRecords: number, maxBytes: number): BusRecord[][] {
  const out: BusRecord[][] = [];
  let current: BusRecord[] = [];
  let bytes = 0;
  for (const r of records) {
    const size = recordBytes(r);
    if (current.length > 0 && (current.length >= maxRecords || bytes + size > maxBytes)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(r);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}
