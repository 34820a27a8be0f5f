/**
 * A harness woken beside input still being appended (WakeRequest.input_landing: the gateway's
 * early Wake, apps/gateway/src/sessions/append.ts) and reaching the log first: it takes the
 * lease, marks nothing idle in a session that never ran, and follows the log for the input,
 * even with no linger, so that nobody needs to wake the session again; woken without it, it lets
 * such a session go with nothing appended. No linger, no sweeper and no wake of freed sessions
 * here: a session given back before its input came would never be answered.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScenario } from "@metaharness/offline-model";
import { WakeOutcome, type Event } from "@metaharness/proto";
import { eventually } from "../../support/eventually.js";
import { idleReason, startBrain, type Brain } from "../../support/harness.js";
import { userMessage } from "../../support/events.js";

const scenarios = [defineScenario("hello", [{ text: "Hello there." }], { onExhausted: "repeat-last" })];

let brain: Brain;
beforeAll(async () => {
  brain = await startBrain({ scenarios, env: { MH_SWEEP_MS: "600000", MH_WAKE_FREED: "false", MH_IDLE_LINGER_MS: "0", MH_LEASE_TTL_MS: "20000" } });
});
afterAll(async () => {
  await brain?.stop();
});

const answered = (events: Event[]): boolean => idleReason(events) !== undefined && events.some((e) => e.type === "agent.message");
const leaseOf = async (sessionId: string) => (await brain.log.client.getSession({ sessionId })).session?.lease;

describe("a Wake ahead of the session's first input", () => {
  it("with input_landing: the harness holds the session, appends nothing, and answers the input when it lands", async () => {
    const supervisor = brain.harnesses[0]!.supervisor;
    const sessionId = await brain.createSession();
    const started = supervisor.started;
    // It read the log as it took the lease: empty then (WakeResponse.read_seq, which the gateway compares with its input's seq).
    expect(await supervisor.wake(sessionId, { inputLanding: true })).toMatchObject({ outcome: WakeOutcome.WAKE_OUTCOME_STARTED, readSeq: 0 });
    await eventually(async () => ((await leaseOf(sessionId)) !== undefined ? true : undefined), "the lease taken");
    await brain.log.client.emitEvent({ sessionId, event: userMessage("[scenario:hello] hi") });
    const events = await brain.waitFor(sessionId, answered);
    // The input stands first: no idle was appended before it, and one loop answered it.
    expect(events[0]?.type).toBe("user.message");
    expect(events.filter((e) => e.type === "session.status_idle")).toHaveLength(1);
    expect(supervisor.started).toBe(started + 1);
    // A Wake of a session whose input is in the log reads it (a fresh lease: the loop ended, no linger).
    await eventually(async () => ((await leaseOf(sessionId)) === undefined ? true : undefined), "the lease given back after the turn");
    expect((await supervisor.wake(sessionId)).readSeq).toBeGreaterThanOrEqual(events.length);
  });

  it("without it: the harness finds nothing to do, appends nothing and gives the lease back", async () => {
    const supervisor = brain.harnesses[0]!.supervisor;
    const sessionId = await brain.createSession();
    expect((await supervisor.wake(sessionId)).outcome).toBe(WakeOutcome.WAKE_OUTCOME_STARTED);
    await eventually(async () => ((await leaseOf(sessionId)) === undefined && !supervisor.list().some((s) => s.sessionId === sessionId) ? true : undefined), "the lease given back");
    const { events } = await brain.log.client.getEvents({ sessionId, position: undefined, limit: 10, types: [] });
    expect(events).toEqual([]);
  });
});
