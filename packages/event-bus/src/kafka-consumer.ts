/**
 * BusConsumer over a kafkajs group consumer. kafkajs resolves a record's offset only after our
 * handler resolves and commits resolved offsets after each batch (and before giving up on a
 * failed record), which is exactly handler-then-commit, at-least-once.
 *
 * A handler's rejection is rethrown as a retriable KafkaJSError: kafkajs then re-fetches the same
 * record after a backoff and, once its retries are spent, restarts the consumer. Rethrowing the
 * handler's own error would be unsafe: kafkajs treats a TypeError (or `retriable: false`) as
 * fatal and stops the consumer for good, silently.
 *
 * The pieces a group member is made of (kafkaMember, deliverTo, disconnectWithin) serve this
 * consumer, which joins before subscribe() resolves, and the membership kept in the background
 * (kafka-membership.ts).
 */
import kafkajs from "kafkajs";
import type { Consumer, EachMessagePayload, Kafka } from "kafkajs";
import { MhError } from "@metaharness/errors";
import { decodeHeaders } from "./headers.js";
import { toMhError } from "./kafka-errors.js";
import { endPositions, seekToStart, type StartPositions } from "./kafka-positions.js";
import type { KafkaBusConfig } from "./kafka-options.js";
import type { BusConsumer, BusMessage, SubscribeOptions } from "./types.js";

const EMPTY = new Uint8Array(0);

/**
 * How long a fetch may wait on the broker for new data. kafkajs heartbeats only between fetches,
 * so an idle member notices a rebalance (a member joining or leaving) only this late; with its
 * defaults (5 s wait, 3 s heartbeat) every join took 5 s. Data still arrives as soon as written.
 */
const FETCH_MAX_WAIT_MS = 1_000;
/** Heartbeats are also throttled to this interval (kafkajs default 3 s). */
const HEARTBEAT_INTERVAL_MS = 1_000;

function toBusMessage({ topic, partition, message }: EachMessagePayload): BusMessage {
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key === null ? "" : message.key.toString("utf8"),
    value: message.value ?? EMPTY,
    headers: decodeHeaders(message.headers),
    timestamp: Number(message.timestamp),
  };
}

/** A kafkajs consumer of `groupId` with the bus's timeouts (never kafkajs's defaults). */
export function kafkaMember(kafka: Kafka, config: KafkaBusConfig, groupId: string): Consumer {
  return kafka.consumer({
    groupId,
    allowAutoTopicCreation: false,
    maxWaitTimeInMs: FETCH_MAX_WAIT_MS,
    heartbeatInterval: HEARTBEAT_INTERVAL_MS,
    sessionTimeout: config.sessionTimeoutMs,
    rebalanceTimeout: config.rebalanceTimeoutMs,
    retry: config.retry,
  });
}

/** kafkajs's eachMessage for `options.handler` (see the header on rejections). */
export function deliverTo(options: SubscribeOptions, config: KafkaBusConfig): (payload: EachMessagePayload) => Promise<void> {
  return async (payload) => {
    const message = toBusMessage(payload);
    try {
      await options.handler(message);
    } catch (err) {
      const { topic, partition, offset } = message;
      config.logger.error(
        { err, groupId: options.groupId, topic, partition, offset },
        "event-bus: handler failed; the record will be delivered again",
      );
      const reason = err instanceof Error ? err.message : String(err);
      throw new kafkajs.KafkaJSError(`event-bus handler failed: ${reason}`, { retriable: true });
    }
  };
}

/** Leaves the group and disconnects, giving up after closeTimeoutMs (a rebalance holds a leave). */
export async function disconnectWithin(consumer: Consumer, config: KafkaBusConfig, groupId: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), config.closeTimeoutMs);
  });
  try {
    const outcome = await Promise.race([consumer.disconnect().then(() => "left" as const), late]);
    if (outcome === "late") {
      config.logger.warn(
        { groupId, closeTimeoutMs: config.closeTimeoutMs, sessionTimeoutMs: config.sessionTimeoutMs },
        "event-bus: the consumer did not leave its group in time; the coordinator drops it after the session timeout",
      );
    }
  } catch (err) {
    config.logger.warn({ err, groupId }, "event-bus: consumer disconnect failed");
  } finally {
    clearTimeout(timer);
  }
}

export class KafkaConsumer implements BusConsumer {
  private readonly consumer: Consumer;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly config: KafkaBusConfig,
    private readonly options: SubscribeOptions,
    private readonly onClosed: () => void,
  ) {
    this.consumer = kafkaMember(kafka, config, options.groupId);
  }

  /** Connects, subscribes and waits until the group is joined; rejects with UNAVAILABLE if not. */
  async start(): Promise<void> {
    const { consumer, config, options } = this;
    const { GROUP_JOIN, CRASH } = consumer.events;
    let positions: StartPositions = new Map();
    let removeListeners: Array<() => void> = [];
    let timer: NodeJS.Timeout | undefined;
    const joined = new Promise<void>((resolve, reject) => {
      removeListeners = [
        // Emitted synchronously inside the join, before the first fetch: a seek here applies to it.
        consumer.on(GROUP_JOIN, (e) => {
          seekToStart(consumer, e.payload.memberAssignment, positions);
          positions = new Map(); // only the first join; later ones resume from commits
          resolve();
        }),
        // A retriable crash (e.g. "the coordinator is loading" right after a broker restart)
        // is restarted by kafkajs, which then joins; the join timeout still bounds the wait.
        consumer.on(CRASH, (e) => {
          if (!e.payload.restart) reject(e.payload.error);
        }),
      ];
      timer = setTimeout(
        () => reject(new MhError("UNAVAILABLE", `event-bus: no group join in ${config.joinTimeoutMs} ms`)),
        config.joinTimeoutMs,
      );
    });
    joined.catch(() => undefined); // observed below; keeps an early crash from being unhandled
    try {
      if (options.fromBeginning !== true) {
        positions = await endPositions(this.kafka, config, options.groupId, options.topics);
      }
      await consumer.connect();
      await consumer.subscribe({ topics: [...options.topics], fromBeginning: options.fromBeginning ?? false });
      // run() itself waits for the first join; `joined` also rejects on a crash or the timeout.
      await Promise.all([consumer.run({ autoCommit: true, eachMessage: deliverTo(options, config) }), joined]);
      if (this.closing !== undefined) {
        throw new MhError("FAILED_PRECONDITION", "event-bus: consumer closed while subscribing");
      }
    } catch (err) {
      // Disconnect even if close() already did: run() may have started after it.
      await disconnectWithin(consumer, config, options.groupId);
      this.closing ??= Promise.resolve();
      this.onClosed();
      throw toMhError(err, `subscribe group ${options.groupId}`);
    } finally {
      clearTimeout(timer);
      for (const remove of removeListeners) remove();
    }
    // kafkajs logs each crash itself; what it does not say loudly is when it gives up for good.
    this.consumer.on(CRASH, (e) => {
      const { error, restart } = e.payload;
      if (restart) return;
      config.logger.error({ err: error, groupId: options.groupId }, "event-bus: consumer stopped for good");
    });
  }

  close(): Promise<void> {
    this.closing ??= disconnectWithin(this.consumer, this.config, this.options.groupId).finally(this.onClosed);
    return this.closing;
  }
}
