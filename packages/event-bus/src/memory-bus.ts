/**
 * createMemoryBus: the EventBus inside one process, for the embedded single-process mode and for
 * unit tests of code that uses the bus. Same contract as Kafka: ensureTopics before use, keys hash
 * to the partitions Kafka would pick, order per key, every group sees every record, commit after
 * the handler resolves. Publish "acknowledges" once the records are in the log.
 */
import { MhError, invalidArgument } from "@metaharness/errors";
import { MemoryGroup, MemoryMember, type RetryBackoff } from "./memory-consumer.js";
import { MemoryLog } from "./memory-log.js";
import { silentLogger } from "./silent-logger.js";
import type {
  BusConsumer,
  BusSubscription,
  BusLogger,
  BusPublisher,
  BusRecord,
  EventBus,
  KeepSubscribedOptions,
  SubscribeOptions,
  TopicSpec,
} from "./types.js";
import { checkRecords, checkSubscribe, checkTopicSpecs } from "./validate.js";

export interface MemoryBusOptions {
  readonly logger?: BusLogger;
  /** Records kept per partition; older ones are dropped as Kafka retention would. Default 100 000. */
  readonly maxRecordsPerPartition?: number;
  /** Backoff before a failed record is delivered again: doubles from initialMs up to maxMs. */
  readonly retryBackoff?: RetryBackoff;
}

export const MEMORY_DEFAULTS = {
  maxRecordsPerPartition: 100_000,
  retryBackoff: { initialMs: 100, maxMs: 5_000 },
} as const;

interface Closeable {
  close(): Promise<void>;
}

/** Runs `fn` now; a throw becomes a rejection, as it would be from the Kafka bus. */
function now<T>(fn: () => T): Promise<T> {
  return new Promise<T>((resolve) => resolve(fn()));
}

class MemoryPublisher implements BusPublisher {
  private closed = false;

  constructor(
    private readonly bus: MemoryBus,
    private readonly onClosed: () => void,
  ) {}

  publish(records: readonly BusRecord[]): Promise<void> {
    return now(() => {
      if (this.closed) throw new MhError("FAILED_PRECONDITION", "event-bus: publisher is closed");
      checkRecords(records);
      this.bus.append(records);
    });
  }

  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.onClosed();
    }
    return Promise.resolve();
  }
}

class MemoryBus implements EventBus {
  private readonly log: MemoryLog;
  private readonly groups = new Map<string, MemoryGroup>();
  private readonly open = new Set<Closeable>();
  private readonly logger: BusLogger;
  private readonly backoff: RetryBackoff;
  private closing: Promise<void> | undefined;

  constructor(options: MemoryBusOptions) {
    const max = options.maxRecordsPerPartition ?? MEMORY_DEFAULTS.maxRecordsPerPartition;
    if (!Number.isSafeInteger(max) || max < 10) {
      throw invalidArgument("maxRecordsPerPartition", "must be an integer >= 10");
    }
    this.log = new MemoryLog(max);
    this.logger = options.logger ?? silentLogger;
    this.backoff = options.retryBackoff ?? MEMORY_DEFAULTS.retryBackoff;
  }

  publisher(): Promise<BusPublisher> {
    return now(() => {
      this.checkOpen();
      const publisher: MemoryPublisher = new MemoryPublisher(this, () => this.open.delete(publisher));
      this.open.add(publisher);
      return publisher;
    });
  }

  subscribe(options: SubscribeOptions): Promise<BusConsumer> {
    return now(() => this.join(options));
  }

  /** In this process a group is joined at once: the membership is the subscription, joined. */
  keepSubscribed(options: KeepSubscribedOptions): BusSubscription {
    this.checkOpen();
    checkSubscribe(options);
    if (options.ensure !== undefined) this.ensure(options.ensure);
    const member = this.join(options);
    options.onJoined?.({ durationMs: 0, first: true });
    let joined = true;
    return {
      get joined() {
        return joined;
      },
      close: () => {
        joined = false;
        return member.close();
      },
    };
  }

  ensureTopics(topics: readonly TopicSpec[]): Promise<void> {
    return now(() => this.ensure(topics));
  }

  close(): Promise<void> {
    this.closing ??= Promise.all([...this.open].map((c) => c.close())).then(() => undefined);
    return this.closing;
  }

  /** Called by publishers: append atomically, then wake the members that read those topics. */
  append(records: readonly BusRecord[]): void {
    this.checkOpen();
    this.log.append(records);
    const topics = new Set(records.map((r) => r.topic));
    for (const group of this.groups.values()) {
      for (const m of group.members) if (m.topics.some((t) => topics.has(t))) m.wake();
    }
  }

  private join(options: SubscribeOptions): MemoryMember {
    this.checkOpen();
    checkSubscribe(options);
    for (const topic of options.topics) this.log.partitions(topic); // NOT_FOUND before joining
    let group = this.groups.get(options.groupId);
    if (group === undefined) this.groups.set(options.groupId, (group = new MemoryGroup(options.groupId)));
    const member: MemoryMember = new MemoryMember(this.log, group, options, this.backoff, this.logger, () => this.open.delete(member));
    this.open.add(member);
    member.start();
    return member;
  }

  private ensure(topics: readonly TopicSpec[]): void {
    this.checkOpen();
    checkTopicSpecs(topics);
    for (const { topic, partitions } of topics) {
      const actual = this.log.create(topic, partitions);
      if (actual !== undefined && actual !== partitions) {
        this.logger.warn(
          { topic, expected: partitions, actual },
          "event-bus: topic exists with a different partition count; keys map to other partitions",
        );
      }
    }
  }

  private checkOpen(): void {
    if (this.closing !== undefined) throw new MhError("FAILED_PRECONDITION", "event-bus: bus is closed");
  }
}

/** An EventBus that lives in this process; nothing survives the process. */
export function createMemoryBus(options: MemoryBusOptions = {}): EventBus {
  return new MemoryBus(options);
}
