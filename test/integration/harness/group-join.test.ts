/**
 * A harness serves whatever its Kafka group does (issue 25, hole 6): it answered nothing until it
 * had joined the wake group, 29-32 s after a restart while the group waited for a member killed
 * with -9, and exited when the join outran its 30 s timeout. Now it serves Wake and sweeps for
 * orphans from its start, joins in the background, and takes wakes from Kafka once joined.
 */
import { randomBytes } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScenario } from "@metaharness/offline-model";
import { StopReasonType, WakeOutcome, type Event } from "@metaharness/proto";
import { idleReason, startBrain, startDoomedHarness, type Brain, type DoomedHarness } from "../../support/harness.js";
import { describeGroup, KAFKA_BROKERS } from "../../support/topics.js";
import { userMessage } from "../../support/events.js";

let brain: Brain;
const processes: DoomedHarness[] = [];
beforeAll(async () => {
  brain = await startBrain({
    scenarios: [defineScenario("hi", [{ text: "hello from a brain" }], { onExhausted: "repeat-last" })],
    logEnv: { MH_RELAY_ENABLED: "true", MH_RELAY_POLL_MS: "100" },
    // The brain's own instance neither sweeps, takes freed sessions (MH_WAKE_FREED), nor consumes: only the processes below drive sessions.
    env: { MH_SWEEP_MS: "600000", MH_WAKE_FREED: "false" },
  });
});
afterAll(async () => {
  for (const p of processes) await p.kill();
  await brain?.stop();
});

const ended = (e: Event[]): boolean => idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN;

async function harness(env: Record<string, string>): Promise<DoomedHarness> {
  const p = await startDoomedHarness(brain, { MH_LOG_LEVEL: "info", ...env });
  processes.push(p);
  return p;
}

/** A session with a user message waiting, not yet woken. */
async function waiting(): Promise<string> {
  const sessionId = await brain.createSession();
  await brain.log.client.emitEvent({ sessionId, event: userMessage("[scenario:hi] hi") });
  return sessionId;
}

describe("a harness whose Kafka does not answer", () => {
  let silent: Server;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    // A "broker" that accepts connections and never says a word.
    silent = createServer((s) => sockets.push(s));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it("serves Wake and sweeps orphans from its start, and stays up", async () => {
    const address = silent.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    const h = await harness({
      MH_INSTANCE_ID: "kafka-silent",
      MH_KAFKA_WAKE: "true",
      MH_KAFKA_BROKERS: `127.0.0.1:${port}`,
      MH_KAFKA_TOPIC: brain.log.topic,
      MH_SWEEP_MS: "250",
    });
    try {
      const woken = await waiting();
      // Its own sweeper (every 250 ms) may find the waiting session before this Wake arrives, on
      // a loaded machine: either way this instance, serving from its start, drives it.
      const answer = await h.rpc.wake({ sessionId: woken });
      expect([WakeOutcome.WAKE_OUTCOME_STARTED, WakeOutcome.WAKE_OUTCOME_ALREADY_RUNNING]).toContain(answer.outcome);
      expect(answer.leaseHolder).toBe("kafka-silent");
      await brain.waitFor(woken, ended);
      // Left to the sweeper: another session whose wake-up was lost.
      await brain.waitFor(await waiting(), ended);
      expect(h.child.exitCode).toBeNull();
      expect(h.output()).not.toContain('"level":60');
    } finally {
      // Its sweeper would otherwise take the next test's waiting session before that test's own
      // Wake reached its harness (seen in CI: HELD_ELSEWHERE), pass or fail.
      await h.kill();
    }
  });
});

describe("a harness restarted while its group waits for a member killed with -9", () => {
  it("serves before the group drops the dead member, joins after, and then takes wakes from Kafka", async () => {
    const group = `mh-test-join-${randomBytes(4).toString("hex")}`;
    const kafka = { MH_KAFKA_WAKE: "true", MH_KAFKA_BROKERS: KAFKA_BROKERS, MH_KAFKA_GROUP: group, MH_KAFKA_TOPIC: brain.log.topic, MH_SWEEP_MS: "600000" };
    // The member to be killed holds the group's joins for its session timeout: 20 s here.
    const ghost = await harness({ ...kafka, MH_INSTANCE_ID: "ghost", MH_KAFKA_SESSION_TIMEOUT_MS: "20000", MH_KAFKA_REBALANCE_TIMEOUT_MS: "20000" });
    await expect.poll(() => describeGroup(group), { timeout: 30_000, interval: 200 }).toMatchObject({ state: "Stable", clients: ["ghost"] });
    await ghost.kill("SIGKILL");

    const restarted = await harness({ ...kafka, MH_INSTANCE_ID: "restarted" });
    // Serving, and driving a session woken by RPC, while the dead member is still in the group.
    const sessionId = await waiting();
    expect((await restarted.rpc.wake({ sessionId })).outcome).toBe(WakeOutcome.WAKE_OUTCOME_STARTED);
    await brain.waitFor(sessionId, ended);
    expect((await describeGroup(group)).clients).toContain("ghost");

    // Then the join, in the background, once the coordinator has dropped the dead member.
    await expect.poll(() => restarted.output(), { timeout: 40_000, interval: 200 }).toContain("joined the wake group");
    expect(await describeGroup(group)).toMatchObject({ state: "Stable", clients: ["restarted"] });
    // Wakes from Kafka now reach it (its sweeper is off).
    await brain.waitFor(await waiting(), ended, 30_000);
    expect(restarted.child.exitCode).toBeNull();
  }, 90_000);
});
