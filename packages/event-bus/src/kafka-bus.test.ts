/**
 * The Kafka bus against a REAL broker (MH_KAFKA_BROKERS, default 127.0.0.1:9092): the shared
 * contract plus Kafka-only behaviour. The broker is required — CI always has one — and a missing
 * broker fails with how to start it; MH_SKIP_KAFKA=1 skips these tests deliberately. The failure
 * mode tests (no broker, a silent broker) need no broker and always run.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
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

/** Readiness probe: polls the listener until it accepts, or fails saying how to start Kafka. */
async function requireBroker({ brokers, waitMs }: KafkaTestEnv): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    for (const b of brokers) if (await tcpOpen(b, 1_000)) return;
    if (Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(
    `No Kafka broker at ${brokers.join(",")} after ${waitMs} ms. Start it with infra/kafka/up.sh ` +
      "(bash infra/kafka/up.sh), or point MH_KAFKA_BROKERS at one; MH_SKIP_KAFKA=1 skips these tests.",
  );
}

const env = kafkaTestEnv();
/** Short retries so failure tests finish fast; deliveries still get several attempts. */
const testRetry = { retries: 3, initialRetryTimeMs: 100, maxRetryTimeMs: 1_000 } as const;

describe.skipIf(env.skip)(`Kafka at ${env.brokers.join(",")}`, () => {
  const base: KafkaBusOptions = { brokers: env.brokers, clientId: "event-bus-test", retry: testRetry };

  describeBusContract({
    name: "Kafka bus",
    open: async () => {
      await requireBroker(env);
      // 300 does not divide 1000: the big publish goes out as 300+300+300+100.
      return createKafkaBus({ ...base, maxBatchRecords: 300 });
    },
    waitMs: 30_000,
  });

  describe("topics", () => {
    const logger = recordingLogger();
    let bus: EventBus | undefined;
    beforeAll(async () => {
      await requireBroker(env);
      bus = createKafkaBus({ ...base, logger });
    });
    afterAll(async () => {
      await bus?.close();
    });

    it("ensureTopics is idempotent and warns when an existing topic has another partition count", async () => {
      const topic = uniqueName("topics");
      await bus?.ensureTopics([{ topic, partitions: 3 }]);
      await bus?.ensureTopics([{ topic, partitions: 3 }, { topic: uniqueName("topics"), partitions: 1 }]);
      expect(logger.lines.filter((l) => l.level === "warn")).toEqual([]);
      await bus?.ensureTopics([{ topic, partitions: 5 }]);
      expect(logger.lines).toContainEqual(
        expect.objectContaining({ level: "warn", obj: { topic, expected: 5, actual: 3 } }),
      );
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
