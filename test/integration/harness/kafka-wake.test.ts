/**
 * "Many brains" by starting more processes: harness instances consume the session-events topic as
 * one consumer group, and a user.message published by the log's outbox wakes its session on
 * whichever instance owns the session's partition. No Wake call and no sweeping here: Kafka only.
 * The wake's span joins the trace of the append that caused it. Also: consecutive turns of a
 * session read the previous request's prefix from the prompt cache.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { defineScenario } from "@metaharness/offline-model";
import { StopReasonType, type Event } from "@metaharness/proto";
import { idleReason, startBrain, type Brain } from "../../support/harness.js";
import { KAFKA_BROKERS } from "../../support/topics.js";
import { eventually } from "../../support/eventually.js";
import { withSpan } from "@metaharness/telemetry";
import { startTestTelemetry } from "@metaharness/telemetry/testing";
import { userMessage } from "../../support/events.js";

let brain: Brain;
const group = `mh-test-harness-${randomBytes(4).toString("hex")}`;

beforeAll(async () => {
  // The harnesses create the topic (the log only when it first publishes): 6 partitions, as the log expects.
  const kafkaEnv = { MH_KAFKA_WAKE: "true", MH_KAFKA_BROKERS: KAFKA_BROKERS, MH_KAFKA_GROUP: group, MH_SWEEP_MS: "600000", MH_KAFKA_TOPIC_PARTITIONS: "6" };
  brain = await startBrain({
    scenarios: [defineScenario("hi", [{ text: "hello from a brain" }], { onExhausted: "repeat-last" })],
    logEnv: { MH_RELAY_ENABLED: "true", MH_RELAY_POLL_MS: "100", MH_KAFKA_TOPIC_PARTITIONS: "6" },
    // The brain's own instance neither sweeps, takes freed sessions (MH_WAKE_FREED), nor consumes: only the two below drive sessions.
    env: { MH_SWEEP_MS: "600000", MH_WAKE_FREED: "false" },
  });
  const a = await brain.addHarness({ ...kafkaEnv, MH_KAFKA_TOPIC: brain.log.topic });
  const b = await brain.addHarness({ ...kafkaEnv, MH_KAFKA_TOPIC: brain.log.topic });
  // They join the group in the background; what is published before a join may not wake them.
  await eventually(() => Promise.resolve(a.wakeGroup?.joined === true && b.wakeGroup?.joined === true ? true : undefined), "both in the group", 30_000);
});
afterAll(async () => {
  await brain?.stop();
});

const ended = (e: Event[]): boolean => idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN;

describe("wakes from Kafka", () => {
  it("drive every session, spread over the instances of the group", async () => {
    const sessions: string[] = [];
    for (let i = 0; i < 12; i++) sessions.push(await brain.createSession());
    await Promise.all(sessions.map((sessionId) => brain.log.client.emitEvent({ sessionId, event: userMessage("[scenario:hi] hi") })));
    const waiting = new Set(sessions);
    const answers = new Map<string, number>();
    await eventually(
      async () => {
        for (const sessionId of [...waiting]) {
          const { events } = await brain.log.client.getEvents({ sessionId, position: undefined, limit: 100, types: [] });
          if (!ended(events)) continue;
          waiting.delete(sessionId);
          answers.set(sessionId, events.filter((e) => e.type === "agent.message").length);
        }
        return waiting.size === 0 ? true : undefined;
      },
      () => `every session's turn; ${waiting.size} of ${sessions.length} not ended: ${[...waiting].join(", ")}; started: ${brain.harnesses.map((h) => h.supervisor.started).join(", ")}; joined: ${brain.harnesses.map((h) => String(h.wakeGroup?.joined)).join(", ")}`,
      150_000,
    );
    expect([...answers.values()]).toEqual(sessions.map(() => 1));
    const [idle, a, b] = brain.harnesses.map((h) => h.supervisor.started);
    expect(idle).toBe(0);
    // Every session was started, and answered once (above). A member that misses its 6 s session
    // timeout on a busy machine makes the group rebalance, and a wake not yet committed is then
    // delivered again: its session, idle by then, is started once more and has nothing to do.
    expect(a! + b!).toBeGreaterThanOrEqual(sessions.length);
    // 12 sessions over 6 partitions shared by 2 consumers: both take part.
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(0);
  }, 180_000);
});

describe("traces", () => {
  it("the wake is a child of the append that caused it: one trace from the user's send", async () => {
    const tel = startTestTelemetry("kafka-wake-test");
    try {
      const sessionId = await brain.createSession();
      const traceId = await withSpan("test.send", {}, async (span) => {
        await brain.log.client.emitEvent({ sessionId, event: userMessage("[scenario:hi] traced") });
        return span.spanContext().traceId;
      });
      await brain.waitFor(sessionId, ended, 30_000);
      const wake = await eventually(
        () => Promise.resolve(tel.finishedSpans().find((s) => s.name === "harness.wake" && s.attributes["mh.session_id"] === sessionId)),
        "the wake's span",
      );
      expect(wake.spanContext().traceId).toBe(traceId);
    } finally {
      await tel.telemetry.shutdown();
    }
  });
});

describe("prompt cache", () => {
  it("consecutive turns read the previous prefix from the cache", async () => {
    const sessionId = await brain.createSession({ system: "You are a careful assistant. ".repeat(200) });
    await brain.log.client.emitEvent({ sessionId, event: userMessage("[scenario:hi] first") });
    await brain.waitFor(sessionId, ended, 30_000);
    await brain.log.client.emitEvent({ sessionId, event: userMessage("second") });
    const events = await brain.waitFor(sessionId, (e) => e.filter((x) => x.type === "agent.message").length === 2, 30_000);
    const usage = events.flatMap((e) => (e.payload?.$case === "spanModelRequestEnd" ? [e.payload.value.modelUsage!] : []));
    expect(usage).toHaveLength(2);
    expect(usage[0]!.cacheCreationInputTokens).toBeGreaterThan(0);
    expect(usage[1]!.cacheReadInputTokens).toBeGreaterThan(usage[0]!.cacheReadInputTokens);
  });
});
