/**
 * A loop that fails (supervisor.ts fail) ends its turn with a failure and an idle, but not after
 * input that came while it failed: that idle would mark the input answered (it clears
 * awaiting_harness, so no sweep finds the session), and since the gateway sends no Wake while the
 * lease has time left (apps/gateway/src/sessions/append.ts) nothing would take it up. The failure
 * is then recorded alone, and a next turn answers the input. The input is made to come in that
 * window for certain: the harness's log client appends it through the real log just before the
 * failure goes out.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MhError } from "@metaharness/errors";
import { LOOPS, type HarnessLoop } from "@metaharness/harness";
import { StopReasonType, type EmitEventsRequest, type Event } from "@metaharness/proto";
import { eventually } from "../../support/eventually.js";
import { idleReason, startBrain, type Brain } from "../../support/harness.js";
import { textOf, userMessage } from "../../support/events.js";

// The brain's own harness takes no session by itself (no sweeper, no wake of freed sessions): the
// test's harness, with a sweeper, is the only one that drives.
let brain: Brain;
/** Appended through the log just before a session's failure goes out, once. */
const beforeFailure = new Map<string, Event>();
beforeAll(async () => {
  brain = await startBrain({ scenarios: [], env: { MH_SWEEP_MS: "600000", MH_WAKE_FREED: "false", MH_IDLE_LINGER_MS: "0" } });
  await brain.addHarness(
    { MH_SWEEP_MS: "100", MH_WAKE_FREED: "true" },
    {
      loops: new Map([
        ["tool-loop", failingFirst()],
        ["failing", { name: "failing", run: () => Promise.reject(new MhError("INTERNAL", "a bug of the test's")) }],
      ]),
      wrapLog: (log) => ({
        ...log,
        emitEvents: async (req: EmitEventsRequest, opts) => {
          const before = beforeFailure.get(req.sessionId);
          if (before !== undefined && req.events.some(isFailure)) {
            beforeFailure.delete(req.sessionId);
            await brain.log.client.emitEvents({ sessionId: req.sessionId, events: [before] });
          }
          return log.emitEvents(req, opts);
        },
      }),
    },
  );
});
afterAll(async () => {
  await brain?.stop();
});

const isFailure = (e: Event): boolean => e.payload?.$case === "sessionError" && (e.payload.value.error?.message ?? "").startsWith("the harness failed");
const trail = (events: readonly Event[]): string => events.map((e) => `${e.seq} ${e.type} ${textOf(e)}`).join("\n");

/** The default loop, but a session's first run fails once it has read the session's events. */
function failingFirst(): HarnessLoop {
  const real = LOOPS.get("tool-loop")!;
  const failed = new Set<string>();
  return {
    name: real.name,
    run: async (ctx) => {
      if (failed.has(ctx.log.sessionId)) return real.run(ctx);
      failed.add(ctx.log.sessionId);
      await ctx.log.readAfter(0);
      throw new MhError("INTERNAL", "a bug of the test's");
    },
  };
}

describe("a loop that fails", () => {
  it("leaves input that came while it failed to a next turn, with the failure recorded", async () => {
    const sessionId = await brain.createSession();
    beforeFailure.set(sessionId, userMessage("meanwhile"));
    // The harness's sweeper finds the session awaiting a harness.
    await brain.log.client.emitEvents({ sessionId, events: [userMessage("hello")] });
    // Until a turn ended after the message (the failure's, before the fix: then for good).
    const events = await brain.waitFor(sessionId, (es) => {
      const at = es.findIndex((e) => textOf(e) === "meanwhile");
      return at >= 0 && es[es.length - 1]?.type === "session.status_idle" && es.length - 1 > at;
    });
    expect(beforeFailure.has(sessionId)).toBe(false);
    expect(events.filter(isFailure)).toHaveLength(1);
    const at = events.findIndex((e) => textOf(e) === "meanwhile");
    const replies = events.slice(at).filter((e) => e.type === "agent.message").map(textOf);
    expect(replies, trail(events)).toEqual([expect.stringContaining("meanwhile")]);
  });

  it("ends the turn with the failure when nothing came meanwhile", async () => {
    const sessionId = await brain.createSession({}, "failing");
    await brain.log.client.emitEvents({ sessionId, events: [userMessage("hello")] });
    const events = await brain.waitFor(sessionId, (es) => es[es.length - 1]?.type === "session.status_idle");
    expect(events.filter(isFailure), trail(events)).toHaveLength(1);
    expect(idleReason(events)).toBe(StopReasonType.STOP_REASON_TYPE_RETRIES_EXHAUSTED);
    // Answered: once its lease is back, the session awaits no harness, so no sweep takes it again.
    await eventually(async () => ((await brain.log.client.getSession({ sessionId })).session?.lease === undefined ? true : undefined), "the lease given back");
    const { sessions } = await brain.log.client.listSessions({ pageSize: 100, pageToken: "", tenant: "", status: 0, labels: {}, orphaned: true });
    expect(sessions.map((s) => s.sessionId)).not.toContain(sessionId);
  });
});
