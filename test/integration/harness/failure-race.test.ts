/**
 * A loop that fails (supervisor.ts fail) ends its turn with a failure and an idle, but not after
 * input that came while it failed: that idle would mark the input answered (it clears
 * awaiting_harness, so no sweep finds the session), and since the gateway sends no Wake while the
 * lease has time left (apps/gateway/src/sessions/append.ts) nothing would take it up. The failure
 * is then recorded alone, and a next turn answers the input. The input is made to come in that
 * window for certain: the harness's log client appends it through the real log just before the
 * failure goes out.
 * The default loop's own failure (a model request that fails) leaves input that came while the
 * request was out to its next step in the same way: the message is made to come then, and to
 * reach the loop's follow of the log, before the model's failure is thrown. A loop that saw input
 * come on its follow and failed before acting on it leaves it to a next turn too. Input that
 * lands after the request was built but before its start's append (the request goes out while
 * that append is on its way) would stand before the start, where the log says the request saw
 * it: the start then does not land, and the step is decided again with the input.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MhError } from "@metaharness/errors";
import { LOOPS, type HarnessLoop } from "@metaharness/harness";
import { createModelClient, ModelError, type ModelClient } from "@metaharness/model-client";
import { StopReasonType, type EmitEventsRequest, type Event } from "@metaharness/proto";
import { eventually } from "../../support/eventually.js";
import { idleReason, startBrain, type Brain } from "../../support/harness.js";
import { textOf, userMessage } from "../../support/events.js";

// The brain's own harness takes no session by itself (no sweeper, no wake of freed sessions): the
// test's harness, with a sweeper, is the only one that drives.
let brain: Brain;
/** Appended through the log just before a session's failure goes out, once. */
const beforeFailure = new Map<string, Event>();
/**
 * Appended through the log just before a session's next model request start goes out, once: the
 * request is sent while that append is on its way, so input can land after the request was built
 * and before its start (at a lower seq).
 */
const beforeStart = new Map<string, Event>();
beforeAll(async () => {
  brain = await startBrain({ scenarios: [], env: { MH_SWEEP_MS: "600000", MH_WAKE_FREED: "false", MH_IDLE_LINGER_MS: "0" } });
  const model = createModelClient({ apiKey: "offline", model: "claude-offline-test", baseURL: brain.model.url, retry: { maxAttempts: 1, initialDelayMs: 20 } });
  await brain.addHarness(
    { MH_SWEEP_MS: "100", MH_WAKE_FREED: "true" },
    {
      model: failingOnMark(model),
      loops: new Map([
        ["tool-loop", failingFirst()],
        ["plain", LOOPS.get("tool-loop")!],
        ["failing", { name: "failing", run: () => Promise.reject(new MhError("INTERNAL", "a bug of the test's")) }],
        ["fail-after-follow", failingAfterFollow()],
      ]),
      wrapLog: (log) => ({
        ...log,
        watchEvents: (req, opts) => followed(log.watchEvents(req, opts)),
        emitEvents: async (req: EmitEventsRequest, opts) => {
          const early = beforeStart.get(req.sessionId);
          if (early !== undefined && req.events.some((e) => e.type === "span.model_request_start")) {
            beforeStart.delete(req.sessionId);
            await brain.log.client.emitEvents({ sessionId: req.sessionId, events: [early] });
          }
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

/** Waiters for an event's delivery to the harness's follow of the log, by event id. */
const delivered = new Map<string, () => void>();

/** The follow's stream; an event's waiter is told once the follower took it (merged it into its view). */
async function* followed<T extends { event?: Event | undefined }>(stream: AsyncIterable<T>): AsyncIterable<T> {
  for await (const item of stream) {
    yield item;
    const id = item.event?.id;
    if (id !== undefined) delivered.get(id)?.();
  }
}

/** Marks a session's first message with: its model request fails once `meanwhile` (a session's) reached the loop. */
const FAIL_MARK = "[fail-after-input]";
const meanwhileFor = new Map<string, { sessionId: string; event: Event }>();
/** Marks a session's first message with: its first model request fails (FAIL_ONCE and a token). */
const FAIL_ONCE = "[fail-once]";
const failOnce = new Set<string>();
/** Marks a session's first message with: the model says the prompt is too long `refusals` times; `event` comes before the last. */
const TOO_LONG = "[too-long]";
const tooLong = new Map<string, { refusals: number; sessionId: string; event: Event }>();

/** The model, but a request whose first user text carries FAIL_MARK and a token fails, once, after that token's message came. */
function failingOnMark(model: ModelClient): ModelClient {
  return {
    model: model.model,
    streamMessage: async (params, hooks) => {
      const first = JSON.stringify(params.messages[0]?.content ?? "");
      const long = [...tooLong.keys()].find((t) => first.includes(`${TOO_LONG}${t}`));
      const left = long === undefined ? undefined : tooLong.get(long);
      if (long !== undefined && left !== undefined) {
        // The second refusal (after the forced compaction) ends the turn: the message comes first.
        if (left.refusals === 1) tooLong.delete(long);
        else tooLong.set(long, { ...left, refusals: left.refusals - 1 });
        if (left.refusals === 1) {
          const taken = new Promise<void>((resolve) => delivered.set(left.event.id, resolve));
          await brain.log.client.emitEvents({ sessionId: left.sessionId, events: [left.event] });
          await taken;
        }
        throw new ModelError("INVALID_ARGUMENT", "prompt is too long: 300000 tokens > 200000 maximum", { errorType: "model_request_failed_error", status: 400, retryable: false });
      }
      const once = [...failOnce].find((t) => first.includes(`${FAIL_ONCE}${t}`));
      if (once !== undefined) {
        failOnce.delete(once);
        throw new MhError("UNAVAILABLE", "the test's model failed");
      }
      const token = [...meanwhileFor.keys()].find((t) => first.includes(`${FAIL_MARK}${t}`));
      const pending = token === undefined ? undefined : meanwhileFor.get(token);
      if (token === undefined || pending === undefined) return model.streamMessage(params, hooks);
      meanwhileFor.delete(token);
      // After the request's start landed (input before it abandons the request: the case below).
      await brain.waitFor(pending.sessionId, (es) => es.some((e) => e.type === "span.model_request_start"));
      const taken = new Promise<void>((resolve) => delivered.set(pending.event.id, resolve));
      await brain.log.client.emitEvents({ sessionId: pending.sessionId, events: [pending.event] });
      await taken;
      throw new MhError("UNAVAILABLE", "the test's model failed");
    },
  };
}

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

/** Per session: a message sent once its loop follows the log; the loop fails once its follow has it. */
const followedFor = new Map<string, Event>();

/**
 * The default loop, but a session's first run follows the log (as its view does), sees the
 * session's `followedFor` message come, and fails before acting on it: the message is then one the
 * loop's log port has seen and not answered.
 */
function failingAfterFollow(): HarnessLoop {
  const real = LOOPS.get("tool-loop")!;
  const failed = new Set<string>();
  return {
    name: "fail-after-follow",
    run: async (ctx) => {
      const { sessionId } = ctx.log;
      const meanwhile = followedFor.get(sessionId);
      if (failed.has(sessionId) || meanwhile === undefined) return real.run(ctx);
      failed.add(sessionId);
      const events = await ctx.log.readAfter(0);
      const stop = new AbortController();
      const follow = ctx.log.watch(events[events.length - 1]?.seq ?? 0, stop.signal, ctx.leaseEpoch);
      await brain.log.client.emitEvents({ sessionId, events: [meanwhile] });
      try {
        for await (const { event } of follow) if (event?.id === meanwhile.id) break;
      } finally {
        stop.abort();
      }
      throw new MhError("INTERNAL", "a bug of the test's");
    },
  };
}

/** Until a turn ended after the message sent meanwhile (the failure's, before the fixes: then for good). */
function endedAfterMeanwhile(es: Event[]): boolean {
  const at = es.findIndex((e) => textOf(e) === "meanwhile");
  return at >= 0 && es[es.length - 1]?.type === "session.status_idle" && es.length - 1 > at;
}

describe("a loop that fails", () => {
  it("leaves input that came while it failed to a next turn, with the failure recorded", async () => {
    const sessionId = await brain.createSession();
    beforeFailure.set(sessionId, userMessage("meanwhile"));
    // The harness's sweeper finds the session awaiting a harness.
    await brain.log.client.emitEvents({ sessionId, events: [userMessage("hello")] });
    const events = await brain.waitFor(sessionId, endedAfterMeanwhile);
    expect(beforeFailure.has(sessionId)).toBe(false);
    expect(events.filter(isFailure)).toHaveLength(1);
    const at = events.findIndex((e) => textOf(e) === "meanwhile");
    const replies = events.slice(at).filter((e) => e.type === "agent.message").map(textOf);
    expect(replies, trail(events)).toEqual([expect.stringContaining("meanwhile")]);
  });

  it("of the default loop, at its model request, leaves input that reached it meanwhile to its next step", async () => {
    const sessionId = await brain.createSession({}, "plain");
    const token = sessionId.slice(-8);
    meanwhileFor.set(token, { sessionId, event: userMessage("meanwhile") });
    await brain.log.client.emitEvents({ sessionId, events: [userMessage(`${FAIL_MARK}${token} hello`)] });
    const events = await brain.waitFor(sessionId, endedAfterMeanwhile);
    expect(meanwhileFor.has(token)).toBe(false);
    const at = events.findIndex((e) => textOf(e) === "meanwhile");
    const errors = events.filter((e) => e.payload?.$case === "sessionError" && e.payload.value.error?.message === "the test's model failed");
    expect(errors, trail(events)).toHaveLength(1);
    const replies = events.slice(at).filter((e) => e.type === "agent.message").map(textOf);
    expect(replies, trail(events)).toEqual([expect.stringContaining("meanwhile")]);
    expect(idleReason(events)).toBe(StopReasonType.STOP_REASON_TYPE_END_TURN);
  });

  it("of the default loop, with a final answer, leaves input that landed before the request's start to its next step", async () => {
    const sessionId = await brain.createSession({}, "plain");
    beforeStart.set(sessionId, userMessage("meanwhile"));
    await brain.log.client.emitEvents({ sessionId, events: [userMessage("hello")] });
    const events = await brain.waitFor(sessionId, endedAfterMeanwhile);
    expect(beforeStart.has(sessionId)).toBe(false);
    const at = events.findIndex((e) => textOf(e) === "meanwhile");
    expect(events.findIndex((e) => e.type === "span.model_request_start"), trail(events)).toBeGreaterThan(at);
    const replies = events.filter((e) => e.type === "agent.message").map(textOf);
    expect(replies[replies.length - 1], trail(events)).toContain("meanwhile");
    expect(idleReason(events)).toBe(StopReasonType.STOP_REASON_TYPE_END_TURN);
  });

  it("of the default loop, at a failed model request, leaves input that landed before the request's start to its next step", async () => {
    const sessionId = await brain.createSession({}, "plain");
    const token = sessionId.slice(-8);
    failOnce.add(token);
    beforeStart.set(sessionId, userMessage("meanwhile"));
    await brain.log.client.emitEvents({ sessionId, events: [userMessage(`${FAIL_ONCE}${token} hello`)] });
    const events = await brain.waitFor(sessionId, endedAfterMeanwhile);
    expect(failOnce.has(token)).toBe(false);
    const at = events.findIndex((e) => textOf(e) === "meanwhile");
    expect(events.findIndex((e) => e.type === "span.model_request_start"), trail(events)).toBeGreaterThan(at);
    const replies = events.slice(at).filter((e) => e.type === "agent.message").map(textOf);
    expect(replies, trail(events)).toEqual([expect.stringContaining("meanwhile")]);
    expect(idleReason(events)).toBe(StopReasonType.STOP_REASON_TYPE_END_TURN);
  });

  it("of the default loop, ending a turn at the compaction limit, leaves input that came meanwhile to its next step", async () => {
    const sessionId = await brain.createSession({ contextStrategy: "compaction" }, "plain");
    const token = sessionId.slice(-8);
    tooLong.set(token, { refusals: 2, sessionId, event: userMessage("meanwhile") });
    await brain.log.client.emitEvents({ sessionId, events: [userMessage(`${TOO_LONG}${token} hello`)] });
    const events = await brain.waitFor(sessionId, endedAfterMeanwhile);
    expect(tooLong.has(token)).toBe(false);
    const limits = events.filter((e) => e.payload?.$case === "sessionError" && e.payload.value.error?.type === "compaction_limit_reached_error");
    expect(limits, trail(events)).toHaveLength(1);
    const at = events.findIndex((e) => textOf(e) === "meanwhile");
    const replies = events.slice(at).filter((e) => e.type === "agent.message").map(textOf);
    expect(replies, trail(events)).toEqual([expect.stringContaining("meanwhile")]);
  });

  it("leaves input its follow had seen, but it had not acted on, to a next turn", async () => {
    const sessionId = await brain.createSession({}, "fail-after-follow");
    followedFor.set(sessionId, userMessage("meanwhile"));
    await brain.log.client.emitEvents({ sessionId, events: [userMessage("hello")] });
    const events = await brain.waitFor(sessionId, endedAfterMeanwhile);
    expect(events.filter(isFailure), trail(events)).toHaveLength(1);
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
