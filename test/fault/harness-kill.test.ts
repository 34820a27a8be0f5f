/**
 * kill -9 of a harness process at each moment of a turn: while it streams from the model, and
 * between two of its appends. Another instance resumes from the last event within the target
 * (2 s), and the log ends with one answer: nothing lost, nothing duplicated. The killed process's
 * leases run 60 s: the take-over within 2 s is the log freeing them when its line to the log
 * closed with the process (HoldLeases), not their expiry.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScenario } from "@metaharness/offline-model";
import { StopReasonType, type Event } from "@metaharness/proto";
import { idleReason, startBrain, startDoomedHarness, type Brain } from "../support/harness.js";
import { eventually } from "../support/eventually.js";
import { textOf } from "../support/events.js";

const RESUME_TARGET_MS = 2000;
/** Far beyond the target: a take-over within it did not wait for the dead holder's lease to expire. */
const DOOMED_TTL_MS = 60_000;

let brain: Brain;
beforeAll(async () => {
  brain = await startBrain({
    broker: true,
    scenarios: [
      defineScenario("long", [{ text: "a long and careful answer ".repeat(20), ttftMs: 100, tokensPerSecond: 150 }], {
        onExhausted: "repeat-last",
      }),
      defineScenario("tool", [
        { toolUses: [{ name: "bash", input: { command: "sleep 1.5; echo run >> count; wc -l < count" } }] },
        (ctx) => ({ text: `a long and careful answer: ${ctx.lastToolResult?.content.trim() ?? "?"}` }),
      ]),
    ],
  });
});
afterAll(async () => {
  await brain?.stop();
});

/** Makes the doomed process own a new session's turn, then waits for `moment` and kills it. */
async function killAt(
  moment: (events: Event[]) => boolean,
  prompt = "[scenario:long] explain",
): Promise<{ sessionId: string; killedAt: number }> {
  const doomed = await startDoomedHarness(brain, {
    MH_SANDBOX_BROKER_ADDR: brain.broker!.address,
    MH_SANDBOX_BROKER_TOKEN_FILE: brain.broker!.tokens.tokenFile.harness,
    MH_LEASE_TTL_MS: String(DOOMED_TTL_MS),
  });
  try {
    const sessionId = await doomed.own(() => brain.createSession(), prompt);
    await brain.waitFor(sessionId, moment, 10_000);
    await doomed.kill("SIGKILL");
    return { sessionId, killedAt: Date.now() };
  } catch (err) {
    await doomed.kill();
    throw new Error(`${String(err)}\n--- doomed output ---\n${doomed.output()}`);
  }
}

/** Waits for another instance to take the session over and finish the turn with one answer. */
async function expectResumed(sessionId: string, killedAt: number, _eventsAtKill: number): Promise<void> {
  const holder = await eventually(
    async () => {
      const now = (await brain.log.client.getSession({ sessionId })).session?.lease?.holder;
      return now === "doomed" ? undefined : now;
    },
    "another instance to take the session over",
    10_000 - (Date.now() - killedAt),
  );
  const resumedAfter = Date.now() - killedAt;
  expect(resumedAfter).toBeLessThan(RESUME_TARGET_MS);
  const done = await brain.waitFor(sessionId, (e) => idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN, 15_000);
  const answers = done.filter((e) => e.type === "agent.message");
  expect(answers).toHaveLength(1);
  expect(textOf(answers[0])).toContain("careful answer");
  expect(new Set(done.map((e) => e.id)).size).toBe(done.length);
  process.stdout.write(`  taken over by ${holder} ${resumedAfter} ms after kill -9\n`);
}

describe("kill -9 of the harness", () => {
  it("while streaming from the model: another instance re-asks and answers once", async () => {
    const { sessionId, killedAt } = await killAt((e) => e.some((x) => x.type === "span.model_request_start"));
    const atKill = (await brain.log.client.getEvents({ sessionId, position: undefined, limit: 1000, types: [] })).events;
    expect(atKill.some((e) => e.type === "agent.message")).toBe(false);
    await expectResumed(sessionId, killedAt, atKill.length);
  });

  it("while a tool runs: the call is not run twice, and the turn completes", async () => {
    const { sessionId, killedAt } = await killAt((e) => e.some((x) => x.type === "agent.tool_use"), "[scenario:tool] count");
    const atKill = (await brain.log.client.getEvents({ sessionId, position: undefined, limit: 1000, types: [] })).events;
    expect(atKill.some((e) => e.type === "agent.tool_result")).toBe(false);
    await expectResumed(sessionId, killedAt, atKill.length);
    const done = (await brain.log.client.getEvents({ sessionId, position: undefined, limit: 1000, types: [] })).events;
    const use = done.find((e) => e.type === "agent.tool_use")!;
    const results = done.filter((e) => e.payload?.$case === "agentToolResult" && e.payload.value.toolUseId === use.id);
    expect(results).toHaveLength(1);
    // Whatever the outcome the survivor got (the first run's, or "interrupted"), the command ran
    // at most once: its side effect counts the runs.
    const provisioned = done.find((e) => e.payload?.$case === "sandboxProvisioned")!;
    const sandboxId = provisioned.payload?.$case === "sandboxProvisioned" ? provisioned.payload.value.sandboxId : "";
    const check = await brain.broker!.client.execute({ eventSeq: 0,
      sandboxId,
      sessionId,
      name: "bash",
      input: { command: "cat count 2>/dev/null | wc -l" },
      callId: "check-count",
      timeoutMs: 0,
    });
    expect(Number(check.output.trim())).toBeLessThanOrEqual(1);
  });
});
