/**
 * The gateway wakes no harness after a send while one holds the session's lease with time enough
 * left that it still follows the log (sessions/append.ts): the append's answer says so
 * (EmitEventsResponse.lease_left_ms). Seen at the wire: the gateway under test calls the harness
 * through a proxy that counts the Wake RPCs it gets and hands each to a real harness. With no
 * sweeper, no wake of freed sessions and no Kafka here, a Wake is the only way a session that no
 * harness holds gets one: a send answered after its lease ran out was woken by that send.
 * The log's relay publishes every event, and the cases "woken from Kafka too" give the harness
 * the proxy names a Kafka wake group of its own (MH_KAFKA_WAKE, as deployed): there a session no
 * Wake RPC names is woken from Kafka or not at all.
 */
import Anthropic from "@anthropic-ai/sdk";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig as loadGatewayConfig } from "@metaharness/gateway";
import { LINGER_MARGIN_MAX_MS, lingerMarginMs, loadConfig as loadHarnessConfig, type HarnessHandle } from "@metaharness/harness";
import { defineScenario } from "@metaharness/offline-model";
import { HarnessClient, HarnessService, type Event } from "@metaharness/proto";
import { METRICS, promName } from "@metaharness/telemetry";
import { createClient, promisify } from "@metaharness/service-kit/grpc";
import { startTestTelemetry, type TestTelemetry } from "@metaharness/telemetry/testing";
import { eventually } from "../../support/eventually.js";
import { KEY_A, startStack, type Stack } from "../../support/gateway.js";
import { startCountingHarness, type CountingHarness } from "../../support/counting-harness.js";
import { Gate } from "../../support/gate.js";
import type { HarnessOptions } from "../../support/harness.js";
import { KAFKA_BROKERS } from "../../support/topics.js";

const SCENARIOS = [defineScenario("hello", [{ text: "Hello there." }], { onExhausted: "repeat-last" })];

// The stack's harness keeps a session two minutes after its turn, under a 20 s lease renewed
// meanwhile (a lease outliving its linger's margin is renewed throughout): far more left than
// the gateway's threshold whatever the machine's load. Only Wakes start a session.
const HARNESS_ENV = { MH_SWEEP_MS: "600000", MH_WAKE_FREED: "false", MH_IDLE_LINGER_MS: "120000", MH_LEASE_TTL_MS: "20000" };
const PARTITIONS = "6";

let stack: Stack;
let proxy: CountingHarness;
let sdk: Anthropic;
let environmentId: string;
let tel: TestTelemetry;
let scrapeUrl: string;
beforeAll(async () => {
  tel = startTestTelemetry("wake-skip-test", { prometheusPort: 0 });
  scrapeUrl = (await tel.telemetry.metricsUrl())!;
  const logEnv = { MH_RELAY_ENABLED: "true", MH_RELAY_POLL_MS: "100", MH_KAFKA_TOPIC_PARTITIONS: PARTITIONS };
  stack = await startStack({ scenarios: SCENARIOS, harnessEnv: HARNESS_ENV, logEnv, vault: false });
  proxy = await startCountingHarness(stack.brain.rpc);
  const gateway = await stack.anotherGateway({ MH_HARNESS_ADDR: proxy.address });
  sdk = new Anthropic({ apiKey: KEY_A, baseURL: gateway.url, maxRetries: 0 });
  environmentId = (await sdk.beta.environments.create({ name: "env" })).id;
});
afterAll(async () => {
  await stack?.stop();
  await proxy?.close();
  await tel?.telemetry.shutdown();
});

async function newSession(): Promise<string> {
  const agent = await sdk.beta.agents.create({ name: "hello", model: "claude-sonnet-5-5", system: "[scenario:hello]" });
  return (await sdk.beta.sessions.create({ agent: agent.id, environment_id: environmentId })).id;
}
const say = (sessionId: string, text: string): Promise<unknown> =>
  sdk.beta.sessions.events.send(sessionId, { events: [{ type: "user.message", content: [{ type: "text", text }] }] });
const answered = (n: number) => (events: Event[]): boolean =>
  events.filter((e) => e.type === "agent.message").length === n && events[events.length - 1]?.type === "session.status_idle";
const wakesOf = (sessionId: string): number => proxy.wakes.filter((s) => s === sessionId).length;
/** Wakes of the session from Kafka so far (the consumer's span; a Wake RPC makes none). */
const kafkaWakesOf = (sessionId: string): number =>
  tel.finishedSpans().filter((s) => s.name === "harness.wake" && s.attributes["mh.session_id"] === sessionId).length;
/** The gateway's Wakes of `outcome` so far (metaharness.gateway.wakes, as this process's endpoint exports it). */
async function gatewayWakes(outcome: "sent" | "skipped" | "failed"): Promise<number> {
  const text = await (await fetch(scrapeUrl)).text();
  const series = new RegExp(`^${promName(METRICS.gatewayWakes)}\\{[^}]*outcome="${outcome}"[^}]*\\} (\\S+)$`, "m").exec(text);
  return series === null ? 0 : Number(series[1]);
}
/** A harness's settings for a Kafka wake group of its own on the log's topic. */
const kafkaWake = (): Record<string, string> => ({
  MH_KAFKA_WAKE: "true",
  MH_KAFKA_BROKERS: KAFKA_BROKERS,
  MH_KAFKA_GROUP: `mh-test-wake-skip-${randomBytes(4).toString("hex")}`,
  MH_KAFKA_TOPIC: stack.brain.log.topic,
  MH_KAFKA_TOPIC_PARTITIONS: PARTITIONS,
});

/**
 * Runs `body` with the proxy handing the Wakes to a harness of its own, started with `env` (in
 * its wake group once it joined, when `env` asks for one); stopped after it, so that it keeps no
 * session, and no group membership, past the case.
 */
async function withOwnHarness(env: Record<string, string>, body: (harness: HarnessHandle) => Promise<void>, options: HarnessOptions = {}): Promise<void> {
  const harness = await stack.brain.addHarness(env, options);
  const raw = createClient(HarnessClient, `127.0.0.1:${harness.port}`, { bearerToken: stack.brain.harnessTokens.tokens.admin });
  const before = proxy.target;
  try {
    // What is published before the join wakes nothing.
    if (harness.wakeGroup !== undefined) await eventually(() => Promise.resolve(harness.wakeGroup?.joined === true ? true : undefined), "the harness in its wake group", 60_000);
    proxy.target = promisify(raw, HarnessService);
    await body(harness);
  } finally {
    proxy.target = before;
    raw.close();
    await harness.stop();
  }
}

describe("a send", () => {
  it("makes no Wake while the harness lingers on the session, and is answered", async () => {
    const supervisor = stack.brain.harnesses[0]!.supervisor;
    const sessionId = await newSession();
    const sent = await gatewayWakes("sent");
    const skipped = await gatewayWakes("skipped");
    await say(sessionId, "hi");
    // No lease yet: woken (the gateway answers a send once its Wake is answered).
    expect(wakesOf(sessionId)).toBe(1);
    expect([await gatewayWakes("sent"), await gatewayWakes("skipped")]).toEqual([sent + 1, skipped]);
    await stack.brain.waitFor(sessionId, answered(1));
    const started = supervisor.started;

    await say(sessionId, "again");
    expect(wakesOf(sessionId)).toBe(1);
    expect([await gatewayWakes("sent"), await gatewayWakes("skipped")]).toEqual([sent + 1, skipped + 1]);
    await stack.brain.waitFor(sessionId, answered(2));
    // Taken by the loop that lingered: no wake started another.
    expect(supervisor.started).toBe(started);
    expect(wakesOf(sessionId)).toBe(1);
  });

  it("wakes at once after the lease ran out", async () => {
    // Its own harness: a short linger, so the lease runs out 0.8 s after the turn (the linger and
    // a sixth of the 3 s TTL), neither renewed nor given back.
    await withOwnHarness({ MH_IDLE_LINGER_MS: "300", MH_LEASE_TTL_MS: "3000" }, async (short) => {
      const sessionId = await newSession();
      await say(sessionId, "hi");
      expect(wakesOf(sessionId)).toBe(1);
      await stack.brain.waitFor(sessionId, answered(1));
      await eventually(
        async () => ((await stack.brain.log.client.getSession({ sessionId })).session?.lease === undefined && short.supervisor.driving === 0 ? true : undefined),
        "the lease run out and the loop done",
      );
      const started = short.supervisor.started;

      await say(sessionId, "again");
      // Woken by the send itself, before it was answered: nothing else wakes a session here.
      expect(wakesOf(sessionId)).toBe(2);
      expect(short.supervisor.started).toBe(started + 1);
      await stack.brain.waitFor(sessionId, answered(2));
    });
  });
});

describe("a send after the linger of a harness with a long lease", () => {
  it("wakes at once: the lease the turn's last append left runs out soon after the linger, whatever the TTL", async () => {
    // A 60 s lease: a sixth of it (10 s) after a linger that ended would have skipped the Wake
    // of every send in those 10 s, with no loop following the session to take it (nothing else
    // wakes one here; in a deployment, the sweeper once the lease ran out).
    await withOwnHarness({ MH_IDLE_LINGER_MS: "300", MH_LEASE_TTL_MS: "60000" }, async (long) => {
      const sessionId = await newSession();
      await say(sessionId, "hi");
      expect(wakesOf(sessionId)).toBe(1);
      await stack.brain.waitFor(sessionId, answered(1));
      await eventually(() => Promise.resolve(long.supervisor.driving === 0 ? true : undefined), "the linger over and the loop done");
      const started = long.supervisor.started;

      await say(sessionId, "again");
      expect(wakesOf(sessionId)).toBe(2);
      expect(long.supervisor.started).toBe(started + 1);
      await stack.brain.waitFor(sessionId, answered(2));
    });
  });
});

describe("a send to a harness woken from Kafka too", () => {
  it("makes no Wake while the harness lingers; its Kafka wake finds the session driven, and the loop answers", async () => {
    await withOwnHarness({ ...HARNESS_ENV, ...kafkaWake() }, async (harness) => {
      const sessionId = await newSession();
      await say(sessionId, "hi");
      expect(wakesOf(sessionId)).toBe(1);
      await stack.brain.waitFor(sessionId, answered(1));
      expect(harness.supervisor.started).toBe(1);

      await say(sessionId, "again");
      expect(wakesOf(sessionId)).toBe(1);
      await stack.brain.waitFor(sessionId, answered(2));
      // Both messages' Kafka wakes came and started no second loop: the one that lingered answered.
      await eventually(() => Promise.resolve(kafkaWakesOf(sessionId) >= 2 ? true : undefined), () => `two Kafka wakes; seen ${kafkaWakesOf(sessionId)}`, 30_000);
      expect(harness.supervisor.started).toBe(1);
      expect(harness.supervisor.driving).toBe(1);
    });
  }, 180_000);

  it("makes no Wake while a holder that will not take it still holds the lease; the Kafka wake takes it up", async () => {
    // No linger: the loop gives the lease back once its turn is over, and its release waits at
    // the gate while the send lands with the lease's TTL left. Without Kafka nothing here would
    // answer it (the harnesses' lines would, MH_WAKE_FREED, and the sweeper).
    const gate = new Gate();
    const wrapLog: HarnessOptions["wrapLog"] = (log) => ({ ...log, releaseLease: async (req, opts) => (await gate.pass(), log.releaseLease(req, opts)) });
    await withOwnHarness({ ...HARNESS_ENV, MH_IDLE_LINGER_MS: "0", ...kafkaWake() }, async (harness) => {
      const sessionId = await newSession();
      gate.armed = true;
      await say(sessionId, "hi");
      expect(wakesOf(sessionId)).toBe(1);
      await stack.brain.waitFor(sessionId, answered(1));
      await gate.reached;
      expect(harness.supervisor.driving).toBe(0);
      expect((await stack.brain.log.client.getSession({ sessionId })).session?.lease?.holder).toBe(harness.supervisor.instanceId);
      await say(sessionId, "again");
      expect(wakesOf(sessionId)).toBe(1);
      gate.open();
      // A Kafka wake (waiting for the release under way, supervisor.ts) started a loop for it.
      await stack.brain.waitFor(sessionId, answered(2));
      expect(wakesOf(sessionId)).toBe(1);
      // The Wake's loop, then one from Kafka (a late Kafka wake may start another, with nothing to do).
      expect(harness.supervisor.started).toBeGreaterThanOrEqual(2);
    }, { wrapLog });
  }, 180_000);
});

describe("MH_GATEWAY_WAKE_SKIP_LEASE_MS's default", () => {
  it("lies past the margin a harness's last append leaves its lease after the linger, and short of that lease", () => {
    const files = { MH_SESSION_LOG_TOKEN_FILE: "/dev/null", MH_HARNESS_TOKEN_FILE: "/dev/null", MH_SERVICE_TOKENS_FILE: "/dev/null" };
    const harness = loadHarnessConfig(files);
    const { wakeSkipLeaseMs } = loadGatewayConfig(files);
    const margin = lingerMarginMs(harness.leaseTtlMs);
    // Past the margin, with half a second for the input to reach the harness's follow; and past
    // that of any TTL a harness may be given.
    expect(wakeSkipLeaseMs).toBe(margin + 500);
    expect(lingerMarginMs(600_000)).toBe(LINGER_MARGIN_MAX_MS);
    expect(wakeSkipLeaseMs).toBe(LINGER_MARGIN_MAX_MS + 500);
    // Short of the lease a turn's last append sets (linger and margin): a send in the linger's
    // first part makes no Wake.
    expect(wakeSkipLeaseMs).toBeLessThan(harness.idleLingerMs + margin);
  });
});
