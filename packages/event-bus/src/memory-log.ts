/**
 * The in-process bus's storage: topics of partitioned, append-only logs with Kafka-like offsets
 * and a retention bound per partition, so an embedded process that runs for weeks does not keep
 * every record it ever published.
 */
import { MhError, TopicRef } from "@metaharness/errors";
import { partitionForKey } from "./murmur2.js";
import type { BusRecord } from "./types.js";

export interface StoredRecord {
  readonly key: string;
  readonly value: Uint8Array;
  readonly headers: Readonly<Record<string, string>>;
  readonly timestamp: number;
}

export class MemoryPartition {
  /** Offset of records[0]: the log start offset, which retention moves forward. */
  private base = 0;
  private readonly records: StoredRecord[] = [];

  get start(): number {
    return this.base;
  }

  /** The offset the next record will get (Kafka's log end offset). */
  get end(): number {
    return this.base + this.records.length;
  }

  at(offset: number): StoredRecord | undefined {
    return this.records[offset - this.base];
  }

  append(record: StoredRecord, maxRecords: number): void {
    this.records.push(record);
    if (this.records.length > maxRecords) {
      // Trim to 90% so the splice cost is paid once per many appends.
      const drop = this.records.length - Math.floor(maxRecords * 0.9);
      this.records.splice(0, drop);
      this.base += drop;
    }
  }
}

export class MemoryLog {
  private readonly topics = new Map<string, MemoryPartition[]>();

  constructor(private readonly maxRecordsPerPartition: number) {}

  /** Creates a topic; returns the existing partition count instead if it exists. */
  create(topic: string, partitions: number): number | undefined {
    const existing = this.topics.get(topic);
    if (existing !== undefined) return existing.length;
    this.topics.set(topic, Array.from({ length: partitions }, () => new MemoryPartition()));
    return undefined;
  }

  partitions(topic: string): readonly MemoryPartition[] {
    const parts = this.topics.get(topic);
    if (parts === undefined) {
      throw new MhError("NOT_FOUND", `event-bus: topic ${topic} does not exist; call ensureTopics`, {
        details: TopicRef.of({ topic }),
      });
    }
    return parts;
  }

  /** Appends all records or, if any topic is missing, none. Values are copied. */
  append(records: readonly BusRecord[]): void {
    const targets = records.map((r) => this.partitions(r.topic));
    const timestamp = Date.now();
    records.forEach((r, i) => {
      const parts = targets[i] ?? [];
      const partition = parts[partitionForKey(r.key, parts.length)];
      partition?.append(
        { key: r.key, value: r.value.slice(), headers: { ...r.headers }, timestamp },
        this.maxRecordsPerPartition,
      );
    });
  }
}
