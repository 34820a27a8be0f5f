/**
 * Consumer groups of the in-process bus, with Kafka's semantics: a group's members split the
 * partitions (partition p of a topic goes to member p mod n, in join order), each group keeps its
 * own committed offsets, a member handles one record at a time, and an offset is committed only
 * after the handler resolves. A failing record is retried with capped backoff and blocks its
 * partition, as a Kafka consumer would; nobody else takes a partition while its record is in flight.
 */
import { backoffMs, retryPolicy } from "@metaharness/errors";
import type { MemoryLog } from "./memory-log.js";
import type { BusConsumer, BusLogger, BusMessage, SubscribeOptions } from "./types.js";

export interface RetryBackoff {
  readonly initialMs: number;
  readonly maxMs: number;
}

const slot = (topic: string, partition: number): string => `${partition}:${topic}`;

export class MemoryGroup {
  /** Next offset to deliver per partition; set on first subscribe (fromBeginning or end). */
  readonly committed = new Map<string, number>();
  /** Partitions with a record in a handler right now. */
  readonly busy = new Set<string>();
  /** Consecutive failures of the record at the committed offset, per partition. */
  readonly failures = new Map<string, number>();
  readonly members: MemoryMember[] = [];

  constructor(readonly groupId: string) {}

  /** Wakes every member: work may have appeared or moved. */
  wake(): void {
    for (const m of this.members) m.wake();
  }
}

interface Work {
  readonly key: string;
  readonly message: BusMessage;
}

export class MemoryMember implements BusConsumer {
  private stopped = false;
  private woken = false;
  private resume: (() => void) | undefined;
  private abortSleep: (() => void) | undefined;
  private loop: Promise<void> = Promise.resolve();
  private closing: Promise<void> | undefined;
  /** Rotates where pick() starts, so one busy partition cannot starve the others. */
  private cursor = 0;

  constructor(
    private readonly log: MemoryLog,
    private readonly group: MemoryGroup,
    private readonly options: SubscribeOptions,
    private readonly backoff: RetryBackoff,
    private readonly logger: BusLogger,
    private readonly onClosed: () => void,
  ) {}

  get topics(): readonly string[] {
    return this.options.topics;
  }

  /** Joins the group; a partition without a committed offset starts at its start or its end. */
  start(): void {
    for (const topic of this.options.topics) {
      this.log.partitions(topic).forEach((p, i) => {
        const key = slot(topic, i);
        if (!this.group.committed.has(key)) {
          this.group.committed.set(key, this.options.fromBeginning === true ? p.start : p.end);
        }
      });
    }
    this.group.members.push(this);
    this.group.wake();
    this.loop = this.run().catch((err: unknown) => {
      this.logger.error({ err, groupId: this.group.groupId }, "event-bus: consumer loop failed; it has stopped");
    });
  }

  wake(): void {
    this.woken = true;
    this.resume?.();
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.stopped = true;
      const members = this.group.members;
      members.splice(members.indexOf(this), 1);
      this.wake();
      this.abortSleep?.();
      await this.loop;
      this.group.wake(); // hand our partitions over
      this.onClosed();
    })();
    return this.closing;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.woken = false;
      const work = this.pick();
      if (work === undefined) {
        if (!this.woken) await new Promise<void>((r) => (this.resume = r));
        this.resume = undefined;
        continue;
      }
      await this.deliver(work);
    }
  }

  private async deliver({ key, message }: Work): Promise<void> {
    const { group } = this;
    group.busy.add(key);
    try {
      await this.options.handler(message);
      group.committed.set(key, Number(message.offset) + 1);
      group.failures.delete(key);
    } catch (err) {
      const attempt = (group.failures.get(key) ?? 0) + 1;
      group.failures.set(key, attempt);
      const { topic, partition, offset } = message;
      this.logger.error(
        { err, groupId: group.groupId, topic, partition, offset, attempt },
        "event-bus: handler failed; the record will be delivered again",
      );
      const policy = retryPolicy({ initialIntervalMs: this.backoff.initialMs, maxIntervalMs: this.backoff.maxMs, jitter: 0 });
      await this.sleep(backoffMs(policy, attempt));
    } finally {
      group.busy.delete(key);
      group.wake();
    }
  }

  /** Waits, but returns early when the member is closed (publishes do not cut it short). */
  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.abortSleep = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.abortSleep = done;
    });
  }

  /** The next deliverable record among the partitions this member owns, if any. */
  private pick(): Work | undefined {
    const owned = this.owned();
    for (let n = 0; n < owned.length; n++) {
      const i = (this.cursor + n) % owned.length;
      const work = owned[i] === undefined ? undefined : this.next(owned[i]);
      if (work !== undefined) {
        this.cursor = i + 1;
        return work;
      }
    }
    return undefined;
  }

  private owned(): Array<{ topic: string; partition: number }> {
    const out: Array<{ topic: string; partition: number }> = [];
    for (const topic of this.options.topics) {
      const sharing = this.group.members.filter((m) => m.topics.includes(topic));
      const me = sharing.indexOf(this);
      if (me < 0) continue;
      const count = this.log.partitions(topic).length;
      for (let p = me; p < count; p += sharing.length) out.push({ topic, partition: p });
    }
    return out;
  }

  private next({ topic, partition }: { topic: string; partition: number }): Work | undefined {
    const key = slot(topic, partition);
    if (this.group.busy.has(key)) return undefined;
    const log = this.log.partitions(topic)[partition];
    if (log === undefined) return undefined;
    let offset = this.group.committed.get(key) ?? log.end;
    if (offset < log.start) {
      this.logger.warn(
        { groupId: this.group.groupId, topic, partition, dropped: log.start - offset },
        "event-bus: records were dropped by retention before this group consumed them",
      );
      offset = log.start;
      this.group.committed.set(key, offset);
    }
    const record = log.at(offset);
    if (record === undefined) return undefined;
    const message: BusMessage = {
      topic,
      partition,
      offset: String(offset),
      key: record.key,
      value: record.value.slice(),
      headers: { ...record.headers },
      timestamp: record.timestamp,
    };
    return { key, message };
  }
}
