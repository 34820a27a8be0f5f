/**
 * The Kafka bus against a REAL broker (MH_KAFKA_BROKERS, default 127.0.0.1:9092): the shared
 * contract plus Kafka-only behaviour. The broker is required — CI always has one — and a missing
 * broker fails with how to start it; MH_SKIP_KAFKA=1 skips these tests deliberately. The failure
 * mode tests (no broker, a silent broker) need no broker and always run.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import kafkajs from "kafkajs";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { eventually } from "@metaharness/service-kit/testing";
import { recordingLogger, uniqueName } from "./collector.testkit.js";
import { describeBusContract } from "./contract.testkit.js";
import { createKafkaBus } from "./kafka-bus.js";
import type { KafkaBusOptions } from "./kafka-options.js";
import type { EventBus } from "./types.js";

interface KafkaTestEnv {
  readonly brokers: string[];
  readonly skip: boolean;
  /** How long to wait for a broker that is still starting. */
  readonly waitMs: number;
}

/** The only place these tests read the environment. */
function kafkaTestEnv(env: NodeJS.ProcessEnv = process.env): KafkaTestEnv {
  const brokers = (env.MH_KAFKA_BROKERS ?? "127.0.0.1:9092").split(",").map((b) => b.trim()).filter((b) => b !== "");
  const waitMs = Number(env.MH_KAFKA_WAIT_MS ?? "15000");
  if (brokers.length === 0) throw new Error("MH_KAFKA_BROKERS names no broker");
  if (!Number.isFinite(waitMs) || waitMs < 0) throw new Error("MH_KAFKA_WAIT_MS must be a number of ms");
  return { brokers, skip: env.MH_SKIP_KAFKA === "1", waitMs };
}

function tcpOpen(broker: string, timeoutMs: number): Promise<boolean> {
  const [host = "", port = ""] = broker.split(/:(?=\d+$)/);
  return new Promise((resolve) => {
    const socket = connect({ host, port: Number(port), timeout: timeoutMs });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.once("connect", () => done(true));
    socket.once("timeout", () => done(false));
    socket.once("error", () => done(false));
  });
}

/**
 * Readiness probe, in two steps: the port accepts, then a topic can be ensured, a publish is
 * acknowledged and a group can be joined (a broker that just started accepts connections before
 * its metadata and group coordinator are loaded). Fails saying how to start Kafka.
 */
async function ready({ brokers, waitMs }: KafkaTestEnv): Promise<void> {
  const deadline = Date.now() + waitMs;
  const hint = "Start it with infra/kafka/up.sh (bash infra/kafka/up.sh), or point MH_KAFKA_BROKERS at one; MH_SKIP_KAFKA=1 skips these tests.";
  await eventually(
    async () => {
      for (const b of brokers) if (await tcpOpen(b, 1_000)) return true;
      return undefined;
    },
    `a Kafka broker at ${brokers.join(",")} (none after ${waitMs} ms). ${hint}`,
    waitMs,
  );
  const topic = "event-bus-readiness";
  let last: unknown;
  await eventually(
    async () => {
      const bus = createKafkaBus({ brokers, clientId: "event-bus-test-readiness", retry: testRetry });
      try {
        await bus.ensureTopics([{ topic, partitions: 1 }]);
        await (await bus.publisher()).publish([{ topic, key: "probe", value: new Uint8Array(0), headers: {} }]);
        await bus.subscribe({ groupId: uniqueName("readiness"), topics: [topic], handler: () => Promise.resolve() });
        return true;
      } catch (err) {
        last = err;
        return undefined;
      } finally {
        await bus.close();
      }
    },
    () => `Kafka at ${brokers.join(",")} to be ready (not after ${waitMs} ms: ${last instanceof Error ? last.message : String(last)}). ${hint}`,
    Math.max(0, deadline - Date.now()),
  );
}

/** Deletes test topics with kafkajs directly: the bus deliberately has no deleteTopics. */
async function deleteTopics(brokers: string[], topics: readonly string[]): Promise<void> {
  const admin = new kafkajs.Kafka({ brokers, clientId: "event-bus-test-cleanup", logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: [...topics] });
  } finally {
    await admin.disconnect();
  }
}

/** Short retries so failure tests finish fast; deliveries still get several attempts. */
const testRetry = { retries: 3, initialRetryTimeMs: 100, maxRetryTimeMs: 1_000 } as const;
const env = kafkaTestEnv();
/** One probe per file, shared by the suites that need the broker. */
let probe: Promise<void> | undefined;
const requireBroker = (): Promise<void> => (probe ??= ready(env));

describe.skipIf(env.skip)(`Kafka at ${env.brokers.join(",")}`, () => {
  const base: KafkaBusOptions = { brokers: env.brokers, clientId: "event-bus-test", retry: testRetry };

  describeBusContract({
    name: "Kafka bus",
    open: async () => {
      await requireBroker();
      // 300 does not divide 1000: the big publish goes out as 300+300+300+100.
      return createKafkaBus({ ...base, maxBatchRecords: 300 });
    },
    waitMs: 30_000,
    deleteTopics: (topics) => deleteTopics(env.brokers, topics),
  });

  describe("topics", () => {
    const logger = recordingLogger();
    const created: string[] = [];
    let bus: EventBus | undefined;
    beforeAll(async () => {
      await requireBroker();
      bus = createKafkaBus({ ...base, logger });
    });
    afterAll(async () => {
      await bus?.close();
      if (created.length > 0) await deleteTopics(env.brokers, created);
    });

    it("ensureTopics is idempotent and warns when an existing topic has another partition count", async () => {
      const [topic, other] = [uniqueName("topics"), uniqueName("topics")];
      created.push(topic, other);
      await bus?.ensureTopics([{ topic, partitions: 3 }]);
      await bus?.ensureTopics([{ topic, partitions: 3 }, { topic: other, partitions: 1 }]);
      // kafkajs may warn while a new topic's metadata propagates; the bus itself must not.
      const ownWarnings = (): unknown[] => logger.lines.filter((l) => l.level === "warn" && l.msg.startsWith("event-bus:"));
      expect(ownWarnings()).toEqual([]);
      await bus?.ensureTopics([{ topic, partitions: 5 }]);
      expect(ownWarnings()).toEqual([expect.objectContaining({ obj: { topic, expected: 5, actual: 3 } })]);
    });
  });
});

describe("Kafka bus without a working broker", () => {
  const fast = { clientId: "event-bus-test", connectionTimeoutMs: 500, requestTimeoutMs: 1_000, retry: testRetry };
  const sockets = new Set<Socket>();
  let silent: Server | undefined;
  const consoleSpies = (["log", "info", "warn", "error", "debug"] as const).map((m) =>
    vi.spyOn(console, m).mockImplementation(() => undefined),
  );

  afterEach(() => {
    for (const spy of consoleSpies) expect(spy).not.toHaveBeenCalled();
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => (silent ? silent.close(() => resolve()) : resolve()));
    for (const spy of consoleSpies) spy.mockRestore();
  });

  it("rejects with UNAVAILABLE within seconds when nothing listens (127.0.0.1:1), logging only to the BusLogger", async () => {
    const logger = recordingLogger();
    const bus = createKafkaBus({ ...fast, brokers: ["127.0.0.1:1"], logger });
    try {
      const started = Date.now();
      await expect(bus.publisher()).rejects.toMatchObject({ name: "MhError", code: "UNAVAILABLE" });
      expect(Date.now() - started).toBeLessThan(5_000);
      await expect(bus.ensureTopics([{ topic: "t", partitions: 1 }])).rejects.toMatchObject({ code: "UNAVAILABLE" });
      const handler = (): Promise<void> => Promise.resolve();
      await expect(bus.subscribe({ groupId: "g", topics: ["t"], handler })).rejects.toMatchObject({
        code: "UNAVAILABLE",
        message: expect.stringContaining("ECONNREFUSED") as unknown,
        cause: expect.anything() as unknown,
      });
      expect(logger.lines.some((l) => l.msg.startsWith("kafkajs:"))).toBe(true);
    } finally {
      await bus.close();
    }
  });

  it("rejects with UNAVAILABLE within seconds when the broker accepts but never answers", async () => {
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on("error", () => undefined);
    });
    silent = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    const bus = createKafkaBus({ ...fast, brokers: [`127.0.0.1:${address.port}`], logger: recordingLogger() });
    try {
      const started = Date.now();
      await expect(bus.publisher()).rejects.toMatchObject({ code: "UNAVAILABLE" });
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await bus.close();
    }
  });

  it("keeps a subscription with no broker to reach: never fails, tries again with a logged count, closes at once", async () => {
    const logger = recordingLogger();
    const bus = createKafkaBus({ ...fast, brokers: ["127.0.0.1:1"], logger });
    try {
      const kept = bus.keepSubscribed({ groupId: "g", topics: ["t"], ensure: [{ topic: "t", partitions: 1 }], handler: () => Promise.resolve() });
      expect(kept.joined).toBe(false);
      const failures = (): number => logger.lines.filter((l) => l.msg === "event-bus: group membership failed; trying again").length;
      await eventually(() => Promise.resolve(failures() > 0 ? true : undefined), "a logged membership failure", 10_000);
      expect(failures()).toBeGreaterThan(0);
      expect(kept.joined).toBe(false);
      const started = Date.now();
      await kept.close();
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      await bus.close();
    }
  });

  it("rejects bad options with INVALID_ARGUMENT", () => {
    expect(() => createKafkaBus({ ...fast, brokers: [] })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => createKafkaBus({ ...fast, brokers: ["localhost"] })).toThrow(
      expect.objectContaining({ field: "brokers[0]" }),
    );
    expect(() => createKafkaBus({ ...fast, brokers: ["h:1"], maxBatchRecords: 0 })).toThrow(
      expect.objectContaining({ field: "maxBatchRecords" }),
    );
  });
});
