/**
 * The in-process bus: the shared contract, plus what only it can show cheaply — retention, one
 * handler at a time, draining close, partition handover.
 */
import { describe, expect, it } from "vitest";
import { body, Collector, record, recordingLogger, uniqueName } from "./collector.testkit.js";
import { describeBusContract } from "./contract.testkit.js";
import { createMemoryBus } from "./memory-bus.js";
import type { BusMessage } from "./types.js";

describeBusContract({
  name: "memory bus",
  open: () => Promise.resolve(createMemoryBus({ retryBackoff: { initialMs: 5, maxMs: 20 } })),
  waitMs: 2_000,
});

/** A promise with its resolver, for handlers that must wait on the test. */
function gate(): { open: () => void; opened: Promise<void> } {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe("memory bus", () => {
  it("drops the oldest records past maxRecordsPerPartition and warns the group that missed them", async () => {
    const logger = recordingLogger();
    const bus = createMemoryBus({ logger, maxRecordsPerPartition: 10 });
    try {
      const topic = uniqueName("t");
      await bus.ensureTopics([{ topic, partitions: 1 }]);
      const hold = gate();
      const started = gate();
      const slow = new Collector();
      const handler = async (m: BusMessage): Promise<void> => {
        started.open();
        await hold.opened;
        await slow.handler()(m);
      };
      await bus.subscribe({ groupId: "slow", topics: [topic], fromBeginning: true, handler });
      const publisher = await bus.publisher();
      await publisher.publish([record(topic, "k", "0")]);
      await started.opened; // record 0 is in the handler
      await publisher.publish(Array.from({ length: 24 }, (_, i) => record(topic, "k", String(i + 1))));
      hold.open();
      await slow.waitFor((m) => m.some((x) => body(x) === "24"), 2_000, "record 24");
      const [first, ...rest] = slow.messages.map((m) => Number(body(m)));
      expect(first).toBe(0);
      expect(rest.length).toBeLessThanOrEqual(10);
      expect(rest).toEqual(Array.from({ length: rest.length }, (_, i) => 25 - rest.length + i));
      const dropped = (rest[0] ?? 0) - 1;
      expect(dropped).toBeGreaterThan(0);
      expect(logger.lines).toContainEqual(
        expect.objectContaining({ level: "warn", obj: expect.objectContaining({ groupId: "slow", dropped }) as unknown }),
      );
      const fresh = new Collector();
      await bus.subscribe({ groupId: "fresh", topics: [topic], fromBeginning: true, handler: fresh.handler() });
      await fresh.waitFor((m) => m.length === rest.length, 2_000, "the retained records");
    } finally {
      await bus.close();
    }
  });

  it("runs one handler at a time per consumer, across partitions", async () => {
    const bus = createMemoryBus();
    try {
      const topic = uniqueName("t");
      await bus.ensureTopics([{ topic, partitions: 4 }]);
      let running = 0;
      let most = 0;
      const c = new Collector();
      const handler = async (m: BusMessage): Promise<void> => {
        most = Math.max(most, ++running);
        await new Promise<void>((resolve) => setImmediate(resolve));
        running--;
        await c.handler()(m);
      };
      await bus.subscribe({ groupId: "g", topics: [topic], fromBeginning: true, handler });
      const publisher = await bus.publisher();
      await publisher.publish(Array.from({ length: 40 }, (_, i) => record(topic, `k${i % 8}`, String(i))));
      await c.waitFor((m) => m.length >= 40, 2_000, "40 records");
      expect(most).toBe(1);
    } finally {
      await bus.close();
    }
  });

  it("close() waits for the running handler, then hands the partitions to the rest of the group", async () => {
    const bus = createMemoryBus();
    try {
      const topic = uniqueName("t");
      await bus.ensureTopics([{ topic, partitions: 2 }]);
      const hold = gate();
      const started = gate();
      const first = new Collector();
      const a = await bus.subscribe({
        groupId: "g",
        topics: [topic],
        fromBeginning: true,
        handler: async (m) => {
          started.open();
          await hold.opened;
          await first.handler()(m);
        },
      });
      const second = new Collector();
      await bus.subscribe({ groupId: "g", topics: [topic], fromBeginning: true, handler: second.handler() });
      const publisher = await bus.publisher();
      const keys = ["a", "b", "c", "d", "e", "f"];
      await publisher.publish(keys.map((k) => record(topic, k, k)));
      await started.opened;
      let closed = false;
      const closing = a.close().then(() => (closed = true));
      await new Promise<void>((resolve) => setImmediate(resolve));
      expect(closed).toBe(false);
      hold.open();
      await closing;
      expect(first.messages).toHaveLength(1);
      await second.waitFor((m) => m.length >= keys.length - 1, 2_000, "the rest, after handover");
      expect([...first.messages, ...second.messages].map(body).sort()).toEqual(keys);
    } finally {
      await bus.close();
    }
  });

  it("logs a failed handler with where it failed, and refuses calls after close()", async () => {
    const logger = recordingLogger();
    const bus = createMemoryBus({ logger, retryBackoff: { initialMs: 1, maxMs: 1 } });
    const topic = uniqueName("t");
    await bus.ensureTopics([{ topic, partitions: 1 }]);
    let calls = 0;
    const c = new Collector();
    await bus.subscribe({
      groupId: "g",
      topics: [topic],
      handler: c.handler(() => {
        if (calls++ < 2) throw new Error("boom");
      }),
    });
    const publisher = await bus.publisher();
    await publisher.publish([record(topic, "k", "x")]);
    await c.waitFor((m) => m.length === 1, 2_000, "the record");
    const errors = logger.lines.filter((l) => l.level === "error");
    expect(errors).toHaveLength(2);
    expect(errors[1]?.obj).toMatchObject({ groupId: "g", topic, partition: 0, offset: "0", attempt: 2 });
    await bus.close();
    await bus.close();
    await expect(bus.publisher()).rejects.toMatchObject({ code: "FAILED_PRECONDITION" });
    await expect(publisher.publish([record(topic, "k", "y")])).rejects.toMatchObject({ code: "FAILED_PRECONDITION" });
  });
});
