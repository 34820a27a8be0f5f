/**
 * The EventBus contract as one test suite, run against every implementation (the in-process bus
 * and real Kafka), so "same semantics" is checked rather than claimed. Each test uses its own
 * topics and groups; the bus is closed in afterAll even if a test or the setup failed.
 */
import { eventually } from "@metaharness/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { body, Collector, record, uniqueName } from "./collector.testkit.js";
import { partitionForKey } from "./murmur2.js";
import type { BusMessage, BusRecord, EventBus } from "./types.js";

export interface ContractTarget {
  readonly name: string;
  /** Makes the bus under test; a rejection fails every test with its message. */
  open(): Promise<EventBus>;
  /** Upper bound for one wait on deliveries. */
  readonly waitMs: number;
  /** Removes the topics the suite created (a real broker keeps them across runs). */
  deleteTopics?(topics: readonly string[]): Promise<void>;
}

const bodies = (c: Collector): string[] => c.messages.map(body);
const ints = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
const range = (from: number, to: number): string[] => Array.from({ length: to - from }, (_, i) => String(from + i));

export function describeBusContract(target: ContractTarget): void {
  describe(`${target.name}: EventBus contract`, () => {
    let opened: EventBus | undefined;
    const { waitMs } = target;
    const bus = (): EventBus => {
      if (opened === undefined) throw new Error(`${target.name} did not open; see the beforeAll error`);
      return opened;
    };
    const created: string[] = [];
    const newTopic = async (partitions: number): Promise<string> => {
      const topic = uniqueName("contract");
      created.push(topic);
      await bus().ensureTopics([{ topic, partitions }]);
      return topic;
    };
    const publish = async (records: readonly BusRecord[]): Promise<void> => {
      const publisher = await bus().publisher();
      try {
        await publisher.publish(records);
      } finally {
        await publisher.close();
      }
    };

    beforeAll(async () => {
      opened = await target.open();
    });
    afterAll(async () => {
      await opened?.close();
      if (created.length > 0) await target.deleteTopics?.(created);
    });

    it("delivers 1000 records over 10 keys to each group, in publish order per key, headers intact", async () => {
      const topic = await newTopic(3);
      const headers = (i: number): Record<string, string> => ({ seq: String(i), "x-utf8": "ünïcødé ✓", empty: "" });
      const records = Array.from({ length: 1000 }, (_, i) => record(topic, `key-${i % 10}`, String(i), headers(i)));
      const groups = [new Collector(), new Collector()];
      for (const c of groups) {
        await bus().subscribe({ groupId: uniqueName("g"), topics: [topic], fromBeginning: true, handler: c.handler() });
      }
      await publish(records);
      await Promise.all(groups.map((c) => c.waitFor((m) => m.length >= 1000, waitMs, "1000 records")));
      for (const c of groups) {
        expect(c.messages).toHaveLength(1000);
        const byKey = c.byKey();
        expect(byKey.size).toBe(10);
        for (const [key, messages] of byKey) {
          const k = Number(key.slice("key-".length));
          expect(messages.map(body)).toEqual(ints(100).map((n) => String(n * 10 + k)));
          for (const m of messages) {
            expect(m.topic).toBe(topic);
            expect(m.headers).toEqual(headers(Number(body(m))));
            expect(m.partition).toBe(partitionForKey(key, 3));
            expect(m.timestamp).toBeGreaterThan(Date.now() - 600_000);
          }
          const offsets = messages.map((m) => BigInt(m.offset));
          expect(offsets).toEqual([...offsets].sort((a, b) => (a < b ? -1 : 1)));
        }
      }
    });

    it("splits the partitions between members of one group, each record to one member", async () => {
      const topic = await newTopic(3);
      const keys = range(0, 10).map((i) => `k${i}`);
      expect(new Set(keys.map((k) => partitionForKey(k, 3))).size).toBe(3);
      const groupId = uniqueName("g-split");
      const all = new Collector();
      const members: BusMessage[][] = [[], []];
      for (const mine of members) {
        const handler = all.handler((m) => void mine.push(m));
        await bus().subscribe({ groupId, topics: [topic], fromBeginning: true, handler });
      }
      await publish(keys.flatMap((k) => range(0, 3).map((n) => record(topic, k, `${k}/${n}`))));
      await all.waitFor((m) => m.length >= 30, waitMs, "30 records across the group");
      expect(bodies(all).sort()).toEqual(keys.flatMap((k) => range(0, 3).map((n) => `${k}/${n}`)).sort());
      const partitions = members.map((mine) => new Set(mine.map((m) => m.partition)));
      expect(partitions.every((p) => p.size > 0)).toBe(true);
      expect([...(partitions[0] ?? [])].filter((p) => partitions[1]?.has(p))).toEqual([]);
    });

    it("delivers a record again after its handler rejects, holding back the rest of its partition", async () => {
      const topic = await newTopic(1);
      let attempts = 0;
      const c = new Collector();
      const handler = c.handler((m) => {
        // A TypeError on purpose: kafkajs alone would treat it as fatal and stop consuming.
        if (body(m) === "3" && ++attempts === 1) throw new TypeError("handler bug, first time only");
      });
      await bus().subscribe({ groupId: uniqueName("g-retry"), topics: [topic], fromBeginning: true, handler });
      await publish(range(0, 6).map((n) => record(topic, "k", n)));
      await c.waitFor((m) => m.length >= 6, waitMs, "6 records");
      expect(attempts).toBe(2);
      expect(bodies(c)).toEqual(range(0, 6));
    });

    it("commits only after the handler resolves, so the group resumes at the first unhandled record", async () => {
      const topic = await newTopic(1);
      const groupId = uniqueName("g-commit");
      await publish(range(0, 10).map((n) => record(topic, "k", n)));
      const first = new Collector();
      let blocked = (): void => undefined;
      const reachedFive = new Promise<void>((resolve) => (blocked = resolve));
      const consumer = await bus().subscribe({
        groupId,
        topics: [topic],
        fromBeginning: true,
        handler: first.handler((m) => {
          if (Number(body(m)) >= 5) {
            blocked();
            throw new Error("not handled");
          }
        }),
      });
      await reachedFive;
      await consumer.close();
      expect(bodies(first)).toEqual(range(0, 5));
      const second = new Collector();
      await bus().subscribe({ groupId, topics: [topic], fromBeginning: true, handler: second.handler() });
      await second.waitFor((m) => m.length >= 5, waitMs, "records 5..9");
      expect(bodies(second)).toEqual(range(5, 10));
    });

    it("starts a new group at the end of the log as of subscribe() unless fromBeginning", async () => {
      const topic = await newTopic(3);
      await publish(ints(30).map((n) => record(topic, `k${n % 10}`, `old-${n}`)));
      const c = new Collector();
      await bus().subscribe({ groupId: uniqueName("g-latest"), topics: [topic], handler: c.handler() });
      await publish(ints(30).map((n) => record(topic, `k${n % 10}`, `new-${n}`)));
      await c.waitFor((m) => m.length >= 30, waitMs, "the 30 new records");
      expect(bodies(c).sort()).toEqual(ints(30).map((n) => `new-${n}`).sort());
    });

    it("keeps a subscription in the background: returns at once, creates its topic, delivers once joined", async () => {
      const topic = uniqueName("contract-kept");
      created.push(topic);
      const c = new Collector();
      const joins: boolean[] = [];
      const kept = bus().keepSubscribed({
        groupId: uniqueName("g-kept"),
        topics: [topic],
        ensure: [{ topic, partitions: 2 }],
        onJoined: ({ first }) => joins.push(first),
        handler: c.handler(),
      });
      await eventually(() => Promise.resolve(kept.joined ? true : undefined), "the kept subscription to join", waitMs);
      expect(kept.joined).toBe(true);
      expect(joins[0]).toBe(true);
      await publish(ints(10).map((n) => record(topic, `k${n % 3}`, String(n))));
      await c.waitFor((m) => m.length >= 10, waitMs, "10 records");
      expect(bodies(c).sort()).toEqual(range(0, 10).sort());
      await kept.close();
      await kept.close();
      expect(kept.joined).toBe(false);
    });

    it("applies concurrent publish calls in call order", async () => {
      const topic = await newTopic(3);
      const c = new Collector();
      await bus().subscribe({ groupId: uniqueName("g-order"), topics: [topic], fromBeginning: true, handler: c.handler() });
      const publisher = await bus().publisher();
      await Promise.all(range(0, 20).map((n) => publisher.publish([record(topic, "same", n)])));
      await publisher.publish([]);
      await publisher.close();
      await c.waitFor((m) => m.length >= 20, waitMs, "20 records");
      expect(bodies(c)).toEqual(range(0, 20));
    });

    it("rejects malformed calls, unknown topics and use after close with MhError codes", async () => {
      const topic = await newTopic(1);
      const publisher = await bus().publisher();
      const bad = { topic, key: "k", value: "not bytes", headers: {} } as unknown as BusRecord;
      await expect(publisher.publish([record(topic, "k", "ok"), bad])).rejects.toMatchObject({
        name: "MhError",
        code: "INVALID_ARGUMENT",
        field: "records[1].value",
      });
      await expect(publisher.publish([record("no such topic", "k", "x")])).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
      await expect(publisher.publish([record(uniqueName("missing"), "k", "x")])).rejects.toMatchObject({
        code: "NOT_FOUND",
      });
      await expect(bus().ensureTopics([{ topic, partitions: 0 }])).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        field: "topics[0].partitions",
      });
      const handler = new Collector().handler();
      await expect(
        bus().subscribe({ groupId: uniqueName("g-missing"), topics: [uniqueName("missing")], handler }),
      ).rejects.toMatchObject({ code: "NOT_FOUND" });
      await publisher.close();
      await publisher.close();
      await expect(publisher.publish([record(topic, "k", "x")])).rejects.toMatchObject({
        code: "FAILED_PRECONDITION",
      });
    });
  });
}
