/**
 * createKafkaBus: the EventBus over a real Kafka cluster, the only file that builds the kafkajs
 * client. It owns every publisher and consumer it hands out, so close() can drain them all, and
 * routes kafkajs's logging into the caller's BusLogger instead of the console.
 */
import kafkajs from "kafkajs";
import type { Kafka, SASLOptions } from "kafkajs";
import { MhError } from "@metaharness/errors";
import { KafkaConsumer } from "./kafka-consumer.js";
import { KafkaMembership } from "./kafka-membership.js";
import { toMhError } from "./kafka-errors.js";
import { stopKafkajsIdleLoop } from "./kafkajs-idle-loop.js";
import { KAFKAJS_LOG_LEVEL, kafkaLogCreator } from "./kafka-log.js";
import { withDefaults, type KafkaBusConfig, type KafkaBusOptions, type KafkaSasl } from "./kafka-options.js";
import { KafkaPublisher } from "./kafka-publisher.js";
import { ensureKafkaTopics } from "./kafka-topics.js";
import type { BusConsumer, BusPublisher, BusSubscription, EventBus, KeepSubscribedOptions, SubscribeOptions, TopicSpec } from "./types.js";
import { checkSubscribe, checkTopicSpecs } from "./validate.js";

/** The Kafka implementation adds nothing to the interface; the alias names what was built. */
export type KafkaBus = EventBus;

interface Closeable {
  close(): Promise<void>;
}

class KafkaEventBus implements KafkaBus {
  private readonly kafka: Kafka;
  private readonly open = new Set<Closeable>();
  private closing: Promise<void> | undefined;

  constructor(private readonly config: KafkaBusConfig) {
    this.kafka = new kafkajs.Kafka({
      brokers: config.brokers,
      clientId: config.clientId,
      // kafkajs names the broker for SNI and checks its certificate against it (not for IPs).
      ...(config.tls === undefined ? {} : { ssl: { ...config.tls } }),
      ...(config.sasl === undefined ? {} : { sasl: saslOptions(config.sasl) }),
      connectionTimeout: config.connectionTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      enforceRequestTimeout: true,
      retry: config.retry,
      logLevel: KAFKAJS_LOG_LEVEL,
      logCreator: kafkaLogCreator(config.logger),
    });
  }

  async publisher(): Promise<BusPublisher> {
    this.checkOpen();
    const publisher: KafkaPublisher = new KafkaPublisher(this.kafka, this.config, () =>
      this.open.delete(publisher),
    );
    this.open.add(publisher);
    try {
      await publisher.connect();
    } catch (err) {
      await publisher.close();
      throw err;
    }
    return publisher;
  }

  async subscribe(options: SubscribeOptions): Promise<BusConsumer> {
    this.checkOpen();
    checkSubscribe(options);
    const consumer: KafkaConsumer = new KafkaConsumer(this.kafka, this.config, options, () =>
      this.open.delete(consumer),
    );
    this.open.add(consumer);
    await consumer.start(); // closes itself on failure
    return consumer;
  }

  keepSubscribed(options: KeepSubscribedOptions): BusSubscription {
    this.checkOpen();
    checkSubscribe(options);
    if (options.ensure !== undefined) checkTopicSpecs(options.ensure);
    const membership: KafkaMembership = new KafkaMembership(this.kafka, this.config, options, (t) => this.ensureTopics(t), () =>
      this.open.delete(membership),
    );
    this.open.add(membership);
    return membership;
  }

  async ensureTopics(topics: readonly TopicSpec[]): Promise<void> {
    this.checkOpen();
    checkTopicSpecs(topics);
    if (topics.length === 0) return;
    const admin = this.kafka.admin({ retry: this.config.retry });
    try {
      await admin.connect();
      await ensureKafkaTopics(admin, topics, this.config);
    } catch (err) {
      throw toMhError(err, "ensure topics");
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  close(): Promise<void> {
    this.closing ??= Promise.all([...this.open].map((c) => c.close())).then(() => undefined);
    return this.closing;
  }

  private checkOpen(): void {
    if (this.closing !== undefined) throw new MhError("FAILED_PRECONDITION", "event-bus: bus is closed");
  }
}

function saslOptions({ mechanism, username, password }: KafkaSasl): SASLOptions {
  switch (mechanism) {
    case "plain":
      return { mechanism, username, password };
    case "scram-sha-256":
      return { mechanism, username, password };
    case "scram-sha-512":
      return { mechanism, username, password };
  }
}

/** An EventBus over Kafka. Throws INVALID_ARGUMENT for bad options; connects lazily. */
export function createKafkaBus(options: KafkaBusOptions): KafkaBus {
  stopKafkajsIdleLoop();
  return new KafkaEventBus(withDefaults(options));
}
