/**
 * A Wake that comes while the instance is still giving the session's lease back (its loop has
 * returned, its ReleaseLease is on the way) must not take the lease it is about to lose: the
 * log gives a holder that asks again its own unexpired lease at the same epoch, and the release
 * under way then freed the new driver's lease under it (a second driver then took over the turn,
 * a model call made twice). The release is held at a gate here, so the Wake lands in that window
 * every time: it waits for the release and takes the lease at the next epoch.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScenario } from "@metaharness/offline-model";
import { WakeOutcome, type Event } from "@metaharness/proto";
import { eventually } from "../../support/eventually.js";
import { idleReason, startBrain, type Brain } from "../../support/harness.js";
import { userMessage } from "../../support/events.js";
import { Gate } from "../../support/gate.js";

const scenarios = [defineScenario("hello", [{ text: "Hello there, how can I help?" }], { onExhausted: "repeat-last" })];

const ended = (events: Event[]): boolean => idleReason(events) !== undefined && events[events.length - 1]?.type === "session.status_idle";
const answers = (events: Event[]): number => events.filter((e) => e.type === "agent.message").length;

// Only the test's wakes: no sweeper, no wake of freed sessions, no linger (the lease goes back at idle).
let brain: Brain;
beforeAll(async () => {
  brain = await startBrain({ scenarios, env: { MH_SWEEP_MS: "600000", MH_WAKE_FREED: "false", MH_IDLE_LINGER_MS: "0" } });
});
afterAll(async () => {
  await brain?.stop();
});

describe("a Wake while the lease is being given back", () => {
  it("waits for the release and takes the lease at the next epoch", async () => {
    const gate = new Gate();
    const harness = await brain.addHarness({}, { wrapLog: (log) => ({ ...log, releaseLease: async (req, opts) => (await gate.pass(), log.releaseLease(req, opts)) }) });
    const { supervisor } = harness;
    const sessionId = await brain.createSession();
    await brain.log.client.emitEvent({ sessionId, event: userMessage("[scenario:hello] hi") });
    gate.armed = true;
    expect((await supervisor.wake(sessionId)).outcome).toBe(WakeOutcome.WAKE_OUTCOME_STARTED);
    await brain.waitFor(sessionId, (e) => ended(e) && answers(e) === 1);
    // The loop returned and its release is held: the lease is still this instance's.
    await gate.reached;
    const kept = (await brain.log.client.getSession({ sessionId })).session?.lease;
    expect(kept?.holder).toBe(supervisor.instanceId);

    await brain.log.client.emitEvent({ sessionId, event: userMessage("[scenario:hello] again") });
    const woke = supervisor.wake(sessionId);
    gate.open();
    expect((await woke).outcome).toBe(WakeOutcome.WAKE_OUTCOME_STARTED);
    // Read as the new loop starts (it has not had a round trip to the log yet): a new epoch, not
    // the one the release under way gave back.
    expect(supervisor.list().find((a) => a.sessionId === sessionId)?.leaseEpoch).toBe((kept?.epoch ?? 0) + 1);
    await brain.waitFor(sessionId, (e) => ended(e) && answers(e) === 2);
    const leaseAfter = async () => (await brain.log.client.getSession({ sessionId })).session?.lease;
    await eventually(async () => (supervisor.driving === 0 && (await leaseAfter()) === undefined ? true : undefined), "the second turn's lease given back");
  });
});
