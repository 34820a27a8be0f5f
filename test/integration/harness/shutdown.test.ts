/**
 * SIGTERM ends a harness process within 5 s whatever it is doing (issue 25, hole 8): while it
 * joins its Kafka group, while the group rebalances (a leave then waited for the rebalance, over
 * 15 s), mid-turn and mid-tool; and it gives its leases back on the way out, so the next brain
 * needs no expiry wait (the lease TTL here is 30 s: a lease left behind would still be held).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScenario } from "@metaharness/offline-model";
import type { Event } from "@metaharness/proto";
import { startBrain, startDoomedHarness, type Brain, type DoomedHarness } from "../../support/harness.js";
import { describeGroup, KAFKA_BROKERS } from "../../support/topics.js";

/** What Kubernetes and infra/stack/down.sh give a process between SIGTERM and SIGKILL is more; this is our promise. */
const SHUTDOWN_BOUND_MS = 5000;

let brain: Brain;
const processes: DoomedHarness[] = [];
beforeAll(async () => {
  brain = await startBrain({
    broker: true,
    scenarios: [
      defineScenario("slow", [{ text: "word ".repeat(500), ttftMs: 10, tokensPerSecond: 20 }], { onExhausted: "repeat-last" }),
      defineScenario("tool", [{ toolUses: [{ name: "bash", input: { command: "sleep 60" } }] }, { text: "done" }]),
    ],
    env: { MH_SWEEP_MS: "600000", MH_WAKE_FREED: "false" },
  });
});
afterAll(async () => {
  for (const p of processes) await p.kill();
  await brain?.stop();
});

async function harness(env: Record<string, string> = {}): Promise<DoomedHarness> {
  const p = await startDoomedHarness(brain, {
    MH_SANDBOX_BROKER_ADDR: brain.broker!.address,
    MH_SANDBOX_BROKER_TOKEN_FILE: brain.broker!.tokens.tokenFile.harness,
    MH_LEASE_TTL_MS: "30000",
    MH_LOG_LEVEL: "info",
    ...env,
  });
  processes.push(p);
  return p;
}

/** SIGTERM, then how long the process took to exit; it must exit 0. */
async function terminate(p: DoomedHarness): Promise<number> {
  const started = Date.now();
  await p.kill("SIGTERM");
  const took = Date.now() - started;
  expect(p.child.exitCode, p.output()).toBe(0);
  return took;
}

async function stopsMidTurn(prompt: string, moment: (events: Event[]) => boolean): Promise<void> {
  const p = await harness();
  const sessionId = await p.own(() => brain.createSession(), prompt);
  await brain.waitFor(sessionId, moment, 30_000);
  expect(await terminate(p)).toBeLessThan(SHUTDOWN_BOUND_MS);
  // Given back on the way out: free now, 30 s before it would have expired.
  expect((await brain.log.client.getSession({ sessionId })).session?.lease?.holder).toBeUndefined();
}

describe("SIGTERM", () => {
  it("mid-turn, while the model streams: exits in time and releases the lease", async () => {
    await stopsMidTurn("[scenario:slow] talk", (e) => e.some((x) => x.type === "span.model_request_start"));
  });

  it("mid-tool, while a command runs in the sandbox: exits in time and releases the lease", async () => {
    await stopsMidTurn("[scenario:tool] wait", (e) => e.some((x) => x.type === "agent.tool_use"));
  });

  it("while joining its group and while the group rebalances: both exit in time", async () => {
    const group = `mh-test-stop-${randomBytes(4).toString("hex")}`;
    const kafka = { MH_KAFKA_WAKE: "true", MH_KAFKA_BROKERS: KAFKA_BROKERS, MH_KAFKA_GROUP: group, MH_KAFKA_TOPIC: brain.log.topic };
    const live = await harness({ ...kafka, MH_INSTANCE_ID: "live" });
    await expect.poll(() => live.output(), { timeout: 30_000, interval: 100 }).toContain("joined the wake group");
    // A member killed with -9 holds the group's next rebalance for its session timeout (40 s).
    const ghost = await harness({ ...kafka, MH_INSTANCE_ID: "ghost", MH_KAFKA_SESSION_TIMEOUT_MS: "40000", MH_KAFKA_REBALANCE_TIMEOUT_MS: "40000" });
    await expect.poll(() => describeGroup(group), { timeout: 30_000, interval: 200 }).toMatchObject({ state: "Stable", clients: ["ghost", "live"] });
    await ghost.kill("SIGKILL");
    const rebalances = (): number => live.output().split("The group is rebalancing").length - 1;
    const before = rebalances();
    // A newcomer's join starts a rebalance that waits for the ghost: it is joining, `live` rebalancing.
    const joining = await harness({ ...kafka, MH_INSTANCE_ID: "joining" });
    await expect.poll(() => describeGroup(group), { timeout: 30_000, interval: 200 }).toMatchObject({ state: "PreparingRebalance" });
    await expect.poll(rebalances, { timeout: 30_000, interval: 100 }).toBeGreaterThan(before);
    const [a, b] = await Promise.all([terminate(joining), terminate(live)]);
    expect(a).toBeLessThan(SHUTDOWN_BOUND_MS);
    expect(b).toBeLessThan(SHUTDOWN_BOUND_MS);
  }, 90_000);
});
