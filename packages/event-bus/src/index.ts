/**
 * @metaharness/event-bus: the one small interface services use to publish and consume events,
 * with a Kafka implementation (kafkajs, kept behind it so the client can be swapped) and an
 * in-process one for the embedded single-process mode and for tests.
 */
export type {
  BusConsumer,
  BusHandler,
  BusLogger,
  BusMessage,
  BusPublisher,
  BusRecord,
  BusSubscription,
  EventBus,
  KeepSubscribedOptions,
  SubscribeOptions,
  TopicSpec,
} from "./types.js";
export { createKafkaBus, type KafkaBus } from "./kafka-bus.js";
export type { BusRetryOptions, KafkaBusOptions, KafkaSasl, KafkaSaslMechanism, KafkaTls } from "./kafka-options.js";
export { KAFKA_SECURITY_ENV, kafkaLinkName, loadKafkaSecurity, type KafkaSecurity, type KafkaSecuritySettings } from "./kafka-security.js";
export { createMemoryBus, type MemoryBusOptions } from "./memory-bus.js";
export type { RetryBackoff } from "./memory-consumer.js";
