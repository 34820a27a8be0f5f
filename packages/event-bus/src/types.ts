/**
 * The one interface every service codes against. Kafka (kafkajs today) and the in-process bus both
 * implement it, so the client library can be swapped and the embedded single-process mode needs no
 * broker. Nothing here names a kafkajs type.
 */

/** A record to publish. The key decides the partition, so records with one key stay in order. */
export interface BusRecord {
  readonly topic: string;
  readonly key: string;
  readonly value: Uint8Array;
  /** Kafka headers are bytes; this bus carries them as utf-8 strings. */
  readonly headers: Readonly<Record<string, string>>;
}

/** A record as a consumer sees it. */
export interface BusMessage {
  readonly topic: string;
  readonly partition: number;
  /** The record's offset in its partition, as a decimal string (Kafka offsets are 64-bit). */
  readonly offset: string;
  /** A record published without a key (by a foreign producer) has the key "". */
  readonly key: string;
  /** A record with a null value (a tombstone) has an empty value. Treat as read-only. */
  readonly value: Uint8Array;
  /** Header bytes decoded as utf-8; when a key repeats, the last value wins. */
  readonly headers: Readonly<Record<string, string>>;
  /** Milliseconds since the epoch: the record's create (or log-append) time. */
  readonly timestamp: number;
}

export type BusHandler = (message: BusMessage) => Promise<void>;

export interface BusPublisher {
  /**
   * Resolves once every record is acknowledged by all in-sync replicas (acks=all). Records with the
   * same topic and key are written in the order given; concurrent calls are applied one after the
   * other, in call order. Rejects with an MhError: INVALID_ARGUMENT for a malformed record,
   * NOT_FOUND for a topic that does not exist, FAILED_PRECONDITION once closed, UNAVAILABLE when
   * the broker could not be reached in the retry budget. A rejected call may have written some of
   * its records: retrying it is safe for consumers that tolerate duplicates (at-least-once).
   */
  publish(records: readonly BusRecord[]): Promise<void>;
  /** Waits for an in-flight publish, then disconnects. Idempotent. */
  close(): Promise<void>;
}

export interface SubscribeOptions {
  /** Consumers sharing a group id split the partitions; every group sees every record. */
  readonly groupId: string;
  readonly topics: readonly string[];
  /**
   * Where a group with no committed offset starts: the oldest retained record (true) or the end of
   * the log as of subscribe() (false, the default), so every record published after subscribe()
   * resolves is delivered. A group with committed offsets resumes from them either way.
   */
  readonly fromBeginning?: boolean;
  /**
   * Called one record at a time per consumer, in offset order per partition. The offset is
   * committed only after the returned promise resolves (at-least-once). A rejection is logged and
   * the same record is delivered again after a backoff; the partition waits until it succeeds.
   */
  readonly handler: BusHandler;
}

export interface BusConsumer {
  /** Stops fetching, waits for the running handler, commits, and leaves the group. Idempotent. */
  close(): Promise<void>;
}

/** What keepSubscribed() is told besides a subscription's options. */
export interface KeepSubscribedOptions extends SubscribeOptions {
  /** Topics to create first when missing (as ensureTopics), tried again with each attempt to join. */
  readonly ensure?: readonly TopicSpec[];
  /** Called at each join of the group (the first, and after each rebalance or restart), with how long that join took. */
  readonly onJoined?: (join: { readonly durationMs: number; readonly first: boolean }) => void;
}

/** A membership kept in the background (keepSubscribed). */
export interface BusSubscription extends BusConsumer {
  /** Whether the consumer holds its partitions now: false until the first join, during a rebalance and while restarting. */
  readonly joined: boolean;
}

export interface TopicSpec {
  readonly topic: string;
  readonly partitions: number;
  /**
   * The largest record batch the topic must take (its max.message.bytes), set when it is
   * created; the broker's default (1 MiB) when absent. An existing topic is not changed: a
   * lower limit there is logged.
   */
  readonly maxMessageBytes?: number;
}

export interface EventBus {
  /** A connected publisher; rejects with UNAVAILABLE when the broker cannot be reached. */
  publisher(): Promise<BusPublisher>;
  /** Resolves once the consumer has joined its group and been assigned its partitions. */
  subscribe(options: SubscribeOptions): Promise<BusConsumer>;
  /**
   * The same subscription kept in the background, for a process that must serve whatever the
   * group does: returns at once, joins when the brokers and the group allow it (a member killed
   * with -9 holds every join until the session timeout drops it), and starts again after
   * failures (brokers down, a consumer stopped for good) with a capped backoff, logged, until
   * closed. Never fails for a slow or absent Kafka; throws only for bad options or a closed bus.
   * A partition the group never committed starts at its end as of the attempt that joins.
   */
  keepSubscribed(options: KeepSubscribedOptions): BusSubscription;
  /**
   * Creates the topics that do not exist yet. An existing topic is left as it is; a different
   * partition count is logged as a warning (keys would hash to different partitions).
   */
  ensureTopics(topics: readonly TopicSpec[]): Promise<void>;
  /** Closes every publisher and consumer this bus made; later calls fail. Idempotent. */
  close(): Promise<void>;
}

/** The logging this package needs; a pino logger satisfies it. */
export interface BusLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}
