/**
 * The same service on the embedded default: PGlite (the same SQL and migrations as the server)
 * and the in-process bus where Kafka would be. What the single-process `mh dev` runs on.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMemoryBus, type BusConsumer, type EventBus } from "@metaharness/event-bus";
import { newEvent } from "@metaharness/events";
import { Event, SessionLogClient, SessionLogService } from "@metaharness/proto";
import { createClient, promisify } from "@metaharness/service-kit/grpc";
import { createLogger } from "@metaharness/service-kit/logging";
import { loadConfig, startSessionLog, type SessionLogHandle } from "@metaharness/session-log";
import { writeServiceTokens, type ServiceTokenFiles } from "../../support/service-tokens.js";
import type { LogClient } from "../../support/session-log.js";
import { agentMessage, userMessage } from "../../support/events.js";
import { eventually } from "../../support/eventually.js";

let handle: SessionLogHandle;
let client: LogClient;
let bus: EventBus;
let consumer: BusConsumer;
let tokens: ServiceTokenFiles<"admin">;
const published: Event[] = [];

beforeAll(async () => {
  bus = createMemoryBus();
  tokens = await writeServiceTokens(["admin"] as const);
  const config = loadConfig({
    MH_SERVICE_TOKENS_FILE: tokens.file,
    MH_DATABASE_URL: "pglite:memory",
    MH_GRPC_PORT: "0",
    MH_RELAY_POLL_MS: "100",
    MH_LOG_LEVEL: "silent",
  });
  handle = await startSessionLog(config, createLogger({ service: "session-log", level: "silent" }), { bus });
  await bus.ensureTopics([{ topic: config.topic, partitions: config.topicPartitions }]);
  consumer = await bus.subscribe({
    groupId: "embedded-test",
    topics: [config.topic],
    fromBeginning: true,
    handler: (msg) => {
      published.push(Event.decode(msg.value));
      return Promise.resolve();
    },
  });
  client = promisify(createClient(SessionLogClient, `127.0.0.1:${handle.port}`, { bearerToken: tokens.tokens.admin }), SessionLogService);
});
afterAll(async () => {
  await consumer?.close();
  await handle?.stop();
  await bus?.close();
  await tokens?.dispose();
});

describe("session-log on PGlite and the in-process bus", () => {
  it("appends idempotently, fences leases, reads slices, watches and publishes", async () => {
    const { session } = await client.createSession({ sessionId: "", metadata: undefined });
    const sessionId = session!.sessionId;
    const lease = await client.acquireLease({ sessionId, holder: "h1", ttlMs: 5000 });
    await client.emitEvents({
      sessionId,
      events: [userMessage("a", "k1"), agentMessage("b"), agentMessage("c")],
      leaseEpoch: lease.lease!.epoch,
    });
    const dup = await client.emitEvent({ sessionId, event: userMessage("again", "k1") });
    expect([dup.duplicate, dup.event?.seq]).toEqual([true, 1]);
    await expect(
      client.emitEvent({ sessionId, event: userMessage("x"), expectedSeq: 1 }),
    ).rejects.toMatchObject({ code: "FAILED_PRECONDITION" });
    await expect(
      client.emitEvent({ sessionId, event: userMessage("x"), leaseEpoch: 99 }),
    ).rejects.toMatchObject({ code: "ABORTED" });

    const back = await client.getEvents({ sessionId, position: { $case: "beforeSeq", value: 4 }, limit: 2, types: [] });
    expect(back.events.map((e) => e.seq)).toEqual([2, 3]);

    const seen: number[] = [];
    const watching = (async () => {
      for await (const msg of client.watchEvents({ sessionId, afterSeq: 1, types: [], includeDeltas: false, batchDeltas: false, fromHead: false })) {
        seen.push(msg.event!.seq);
        if (msg.event!.type === "session.status_terminated") break;
      }
    })();
    await client.emitEvent({ sessionId, event: agentMessage("live") });
    await client.emitEvent({ sessionId, event: newEvent("session.status_terminated", {}) });
    await watching;
    expect(seen).toEqual([2, 3, 4, 5]);

    await eventually(() => Promise.resolve(published.filter((e) => e.sessionId === sessionId).length >= 5 ? true : undefined), "five events published");
    expect(published.filter((e) => e.sessionId === sessionId).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
  });
});
