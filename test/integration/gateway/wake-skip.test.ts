/**
 * The gateway wakes no harness after a send while one holds the session's lease with time enough
 * left that it still follows the log (sessions/append.ts): the append's answer says so
 * (EmitEventsResponse.lease_left_ms). Seen at the wire: the gateway under test calls the harness
 * through a proxy that counts the Wake RPCs it gets and hands each to a real harness. With no
 * sweeper, no wake of freed sessions and no Kafka here, a Wake is the only way a session that no
 * harness holds gets one: a send answered after its lease ran out was woken by that send.
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig as loadGatewayConfig } from "@metaharness/gateway";
import { LINGER_MARGIN_MAX_MS, lingerMarginMs, loadConfig as loadHarnessConfig, type HarnessHandle } from "@metaharness/harness";
import { defineScenario } from "@metaharness/offline-model";
import { HarnessClient, HarnessService, type Event } from "@metaharness/proto";
import { createClient, promisify } from "@metaharness/service-kit/grpc";
import { eventually } from "../../support/eventually.js";
import { KEY_A, startStack, type Stack } from "../../support/gateway.js";
import { startCountingHarness, type CountingHarness } from "../../support/counting-harness.js";

const SCENARIOS = [defineScenario("hello", [{ text: "Hello there." }], { onExhausted: "repeat-last" })];

// The stack's harness keeps a session two minutes after its turn, under a 20 s lease renewed
// meanwhile (a lease outliving its linger's margin is renewed throughout): far more left than
// the gateway's threshold whatever the machine's load. Only Wakes start a session.
const HARNESS_ENV = { MH_SWEEP_MS: "600000", MH_WAKE_FREED: "false", MH_IDLE_LINGER_MS: "120000", MH_LEASE_TTL_MS: "20000" };

let stack: Stack;
let proxy: CountingHarness;
let sdk: Anthropic;
let environmentId: string;
beforeAll(async () => {
  stack = await startStack({ scenarios: SCENARIOS, harnessEnv: HARNESS_ENV, vault: false });
  proxy = await startCountingHarness(stack.brain.rpc);
  const gateway = await stack.anotherGateway({ MH_HARNESS_ADDR: proxy.address });
  sdk = new Anthropic({ apiKey: KEY_A, baseURL: gateway.url, maxRetries: 0 });
  environmentId = (await sdk.beta.environments.create({ name: "env" })).id;
});
afterAll(async () => {
  await stack?.stop();
  await proxy?.close();
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

/** Runs `body` with the proxy handing the Wakes to a harness of its own, started with `env`. */
async function withOwnHarness(env: Record<string, string>, body: (harness: HarnessHandle) => Promise<void>): Promise<void> {
  const harness = await stack.brain.addHarness(env);
  const raw = createClient(HarnessClient, `127.0.0.1:${harness.port}`, { bearerToken: stack.brain.harnessTokens.tokens.admin });
  const before = proxy.target;
  proxy.target = promisify(raw, HarnessService);
  try {
    await body(harness);
  } finally {
    proxy.target = before;
    raw.close();
  }
}

describe("a send", () => {
  it("makes no Wake while the harness lingers on the session, and is answered", async () => {
    const supervisor = stack.brain.harnesses[0]!.supervisor;
    const sessionId = await newSession();
    await say(sessionId, "hi");
    // No lease yet: woken (the gateway answers a send once its Wake is answered).
    expect(wakesOf(sessionId)).toBe(1);
    await stack.brain.waitFor(sessionId, answered(1));
    const started = supervisor.started;

    await say(sessionId, "again");
    expect(wakesOf(sessionId)).toBe(1);
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
