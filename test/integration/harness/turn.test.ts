/**
 * The tool loop against real services: the session log on Postgres, the offline model speaking
 * the Messages API over SSE through the real SDK, harness instances in-process. Tool calls here
 * are custom tools and confirmations (no sandbox broker); sandbox tools are in sandbox.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import { defineScenario } from "@metaharness/offline-model";
import {
  PermissionPolicy,
  StopReasonType,
  ToolConfirmationResult,
  ToolKind,
  WakeOutcome,
  type Event,
} from "@metaharness/proto";
import { idleReason, startBrain, types, type Brain } from "../../support/harness.js";
import { textOf, userMessage } from "../../support/events.js";
import { eventually } from "../../support/eventually.js";

const scenarios = [
  defineScenario("hello", [{ text: "Hello there, how can I help?" }], { onExhausted: "repeat-last" }),
  defineScenario("slow", [{ text: "word ".repeat(60), ttftMs: 50, tokensPerSecond: 100 }], { onExhausted: "repeat-last" }),
  // 125 tokens at 25 a second: 5 s in which a test acts mid-turn, however late its polls come.
  defineScenario("steady", [{ text: "word ".repeat(100), ttftMs: 50, tokensPerSecond: 25 }], { onExhausted: "repeat-last" }),
  // 3,750 tokens at 100 a second: a stop seconds in is the interrupt's, not the answer's end.
  defineScenario("endless", [{ text: "word ".repeat(3000), ttftMs: 50, tokensPerSecond: 100 }]),
  defineScenario("weather", [
    { text: "Let me look that up.", toolUses: [{ name: "get_weather", input: { city: "Paris" } }] },
    (ctx) => ({ text: `The weather: ${ctx.lastToolResult?.content ?? "?"}` }),
  ]),
  defineScenario("ask", [
    { toolUses: [{ name: "bash", input: { command: "rm -rf /tmp/x" } }] },
    (ctx) => ({ text: `tool said: ${ctx.lastToolResult?.content ?? "?"}` }),
  ]),
  defineScenario("flaky", [{ text: "made it", failFirst: { times: 2, status: 429, retryAfterSeconds: 0 } }]),
  defineScenario("broken", [{ text: "never", failFirst: { times: 99, status: 400 } }]),
];

let brain: Brain;
beforeAll(async () => {
  brain = await startBrain({ scenarios });
});
afterAll(async () => {
  await brain?.stop();
});

const ended = (events: Event[]): boolean => idleReason(events) !== undefined && events[events.length - 1]?.type === "session.status_idle";

async function say(sessionId: string, text: string): Promise<void> {
  await brain.log.client.emitEvent({ sessionId, event: userMessage(text) });
  await brain.rpc.wake({ sessionId });
}

describe("a turn", () => {
  it("records the model's answer between status and span events, with usage", async () => {
    const sessionId = await brain.createSession();
    await say(sessionId, "[scenario:hello] hi");
    const events = await brain.waitFor(sessionId, ended);
    expect(types(events)).toEqual([
      "user.message",
      "session.status_running",
      "span.model_request_start",
      "agent.message",
      "span.model_request_end",
      "session.usage",
      "session.status_idle",
    ]);
    expect(textOf(events[3])).toBe("Hello there, how can I help?");
    const end = events[4]!.payload;
    expect(end?.$case === "spanModelRequestEnd" && end.value.modelUsage!.outputTokens > 0).toBe(true);
    expect(idleReason(events)).toBe(StopReasonType.STOP_REASON_TYPE_END_TURN);
  });

  /** What a watcher with deltas sees of one turn: event types, and "delta" for each delta. */
  async function watchTurn(text: string): Promise<string[]> {
    return (await watchTurnWithText(text)).seen;
  }

  /** The same, with the deltas' text in the order they came and the answer's. */
  async function watchTurnWithText(text: string): Promise<{ seen: string[]; deltaText: string; answer: string }> {
    const sessionId = await brain.createSession();
    const seen: string[] = [];
    let deltaText = "";
    let answer = "";
    const controller = new AbortController();
    const watching = (async () => {
      for await (const msg of brain.log.client.watchEvents(
        { sessionId, afterSeq: 0, types: [], includeDeltas: true, batchDeltas: false, fromHead: false },
        { signal: controller.signal },
      )) {
        if (msg.delta) {
          seen.push("delta");
          deltaText += msg.delta.text;
        } else if (msg.event) seen.push(msg.event.type);
        if (msg.event?.type === "agent.message") answer = textOf(msg.event);
        if (msg.event?.type === "session.status_idle") break;
      }
    })();
    await say(sessionId, text);
    await watching;
    return { seen, deltaText, answer };
  }

  it("streams token deltas to a watcher before the message is stored", async () => {
    const seen = await watchTurn("[scenario:slow] talk");
    const firstDelta = seen.indexOf("delta");
    expect(firstDelta).toBeGreaterThan(0);
    expect(firstDelta).toBeLessThan(seen.indexOf("agent.message"));
    expect(seen.filter((s) => s === "delta").length).toBeGreaterThan(3);
  });

  it("streams an answer's deltas so that they spell it, paced or not (fragments of one read go as one delta)", async () => {
    for (const scenario of ["hello", "slow"]) {
      const { deltaText, answer } = await watchTurnWithText(`[scenario:${scenario}] talk`);
      expect(answer).not.toBe("");
      expect(deltaText).toBe(answer);
    }
  });

  it("shows no delta before its request's start, though the request goes out while the start is appended", async () => {
    // An unpaced model answers at once, likely before the start's append has landed.
    for (let i = 0; i < 3; i++) {
      const seen = await watchTurn("[scenario:hello] hi");
      expect(seen.indexOf("delta")).toBeGreaterThan(seen.indexOf("span.model_request_start"));
      expect(seen.indexOf("span.model_request_start")).toBeGreaterThan(-1);
    }
  });

  it("pauses on a custom tool with requires_action and resumes with the client's result", async () => {
    const sessionId = await brain.createSession({
      tools: [{ name: "get_weather", kind: ToolKind.TOOL_KIND_CUSTOM, description: "weather", inputSchema: { type: "object" }, permissionPolicy: 0, mcpServerUrl: "" }],
    });
    await say(sessionId, "[scenario:weather] weather in Paris?");
    const paused = await brain.waitFor(sessionId, ended);
    const use = paused.find((e) => e.type === "agent.custom_tool_use")!;
    expect(idleReason(paused)).toBe(StopReasonType.STOP_REASON_TYPE_REQUIRES_ACTION);
    const idle = paused[paused.length - 1]!.payload;
    expect(idle?.$case === "sessionStatusIdle" && idle.value.stopReason?.eventIds).toEqual([use.id]);

    await brain.log.client.emitEvent({
      sessionId,
      event: newEvent("user.custom_tool_result", {
        customToolUseId: use.id,
        content: [{ block: { $case: "text", value: { text: "sunny, 21C" } } }],
        isError: false,
      }),
    });
    await brain.rpc.wake({ sessionId });
    const done = await brain.waitFor(sessionId, (e) => ended(e) && idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN);
    expect(textOf(done.filter((e) => e.type === "agent.message").pop())).toBe("The weather: sunny, 21C");
  });

  it("asks before an always_ask tool and reports a denial to the model", async () => {
    const sessionId = await brain.createSession({
      tools: [{ name: "bash", kind: ToolKind.TOOL_KIND_SANDBOX, description: "", inputSchema: undefined, permissionPolicy: PermissionPolicy.PERMISSION_POLICY_ALWAYS_ASK, mcpServerUrl: "" }],
    });
    await say(sessionId, "[scenario:ask] clean up");
    const paused = await brain.waitFor(sessionId, ended);
    const use = paused.find((e) => e.type === "agent.tool_use")!;
    expect(idleReason(paused)).toBe(StopReasonType.STOP_REASON_TYPE_REQUIRES_ACTION);
    await brain.log.client.emitEvent({
      sessionId,
      event: newEvent("user.tool_confirmation", {
        toolUseId: use.id,
        result: ToolConfirmationResult.TOOL_CONFIRMATION_RESULT_DENY,
        denyMessage: "not on my machine",
      }),
    });
    await brain.rpc.wake({ sessionId });
    const done = await brain.waitFor(sessionId, (e) => ended(e) && idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN);
    expect(textOf(done.filter((e) => e.type === "agent.message").pop())).toBe("tool said: the user denied this tool call: not on my machine");
  });
});

describe("ListActive", () => {
  it("names the sessions this instance drives, with their lease epoch and the last seq it has seen", async () => {
    const sessionId = await brain.createSession();
    await say(sessionId, "[scenario:endless] talk a while");
    // Mid-turn (the answer streams for over 30 s, then is interrupted): the start of its model
    // request is in. With an answer of half a second, a late poll found the turn over.
    let active: { sessionId: string; leaseEpoch: number; lastSeq: number } | undefined;
    await expect
      .poll(
        async () => {
          active = (await brain.rpc.listActive({})).sessions.find((s) => s.sessionId === sessionId);
          return active?.lastSeq ?? 0;
        },
        { timeout: 20_000 },
      )
      .toBeGreaterThanOrEqual(3);
    expect(active?.leaseEpoch).toBeGreaterThanOrEqual(1);
    const { session } = await brain.log.client.getSession({ sessionId });
    expect(active!.lastSeq).toBeLessThanOrEqual(session!.lastSeq);
    await brain.log.client.emitEvent({ sessionId, event: newEvent("user.interrupt", {}) });
    await brain.waitFor(sessionId, ended);
  });
});

describe("steering a running session", () => {
  it("queues messages sent during a run and answers them in order", async () => {
    const sessionId = await brain.createSession();
    // The first answer streams for 5 s: the two messages below arrive while it runs, not after.
    await say(sessionId, "[scenario:steady] first");
    await brain.waitFor(sessionId, (e) => e.some((x) => x.type === "span.model_request_start"));
    await brain.log.client.emitEvent({ sessionId, event: userMessage("second") });
    await brain.log.client.emitEvent({ sessionId, event: userMessage("third") });
    const events = await brain.waitFor(sessionId, (e) => ended(e) && e.filter((x) => x.type === "agent.message").length >= 2);
    expect(events.filter((e) => e.type === "agent.message")).toHaveLength(2);
    // The second request saw the queued messages after the first answer, in the order sent.
    const last = brain.model.requests[brain.model.requests.length - 1]!;
    const body = last.body as { messages: Array<{ content: Array<{ type: string; text?: string }> }> };
    const said = body.messages.map((m) => m.content.map((b) => (b.text ?? b.type).trim().slice(0, 12)).join("|"));
    expect(said).toEqual(["[scenario:st", "word word wo", "second|third"]);
  });

  it("stops at once on user.interrupt, idle with reason interrupted, nothing half-recorded", async () => {
    const sessionId = await brain.createSession();
    await say(sessionId, "[scenario:endless] go on and on");
    await brain.waitFor(sessionId, (e) => e.some((x) => x.type === "span.model_request_start"));
    const sent = Date.now();
    await brain.log.client.emitEvent({ sessionId, event: newEvent("user.interrupt", {}) });
    const events = await brain.waitFor(sessionId, (e) => idleReason(e) === StopReasonType.STOP_REASON_TYPE_INTERRUPTED);
    // At once: the answer had over 30 s to go (the bound was 1 s, tight on a busy machine).
    expect(Date.now() - sent).toBeLessThan(10_000);
    expect(events.some((e) => e.type === "agent.message")).toBe(false);
  });

  it("stops with budget_reached once the session's tokens are spent", async () => {
    const sessionId = await brain.createSession({ tokenBudget: 10 });
    await say(sessionId, "[scenario:hello] one");
    await brain.waitFor(sessionId, ended);
    await say(sessionId, "[scenario:hello] two");
    const events = await brain.waitFor(sessionId, (e) => idleReason(e) === StopReasonType.STOP_REASON_TYPE_BUDGET_REACHED);
    expect(events.filter((e) => e.type === "agent.message")).toHaveLength(1);
  });
});

describe("model errors", () => {
  it("retries 429s visibly and then answers", async () => {
    const sessionId = await brain.createSession();
    await say(sessionId, "[scenario:flaky] hi");
    const events = await brain.waitFor(sessionId, ended);
    const retries = events.filter((e) => e.type === "session.error");
    expect(retries).toHaveLength(2);
    expect(textOf(events.find((e) => e.type === "agent.message"))).toBe("made it");
  });

  it("ends the turn with session.error on a non-retryable error, never hangs", async () => {
    const sessionId = await brain.createSession();
    await say(sessionId, "[scenario:broken] hi");
    const events = await brain.waitFor(sessionId, ended);
    expect(events.some((e) => e.type === "session.error")).toBe(true);
    expect(idleReason(events)).toBe(StopReasonType.STOP_REASON_TYPE_RETRIES_EXHAUSTED);
  });
});

describe("leases", () => {
  // The wakes raced here are the only ones: a brain whose instances neither sweep nor take freed
  // sessions. The first brain's sweeper (every 500 ms) could wake a session between its input and
  // the test's wakes, which would then all find it running or held.
  let quiet: Brain;
  beforeAll(async () => {
    quiet = await startBrain({ scenarios, env: { MH_SWEEP_MS: "600000", MH_WAKE_FREED: "false" } });
  });
  afterAll(async () => {
    await quiet?.stop();
  });

  it("lets one of two racing wakes in one instance drive, and gives the lease back after the turn", async () => {
    const sessionId = await quiet.createSession();
    await quiet.log.client.emitEvent({ sessionId, event: userMessage("[scenario:hello] twice") });
    const supervisor = quiet.harnesses[0]!.supervisor;
    const outcomes = await Promise.all([supervisor.wake(sessionId), supervisor.wake(sessionId)]);
    expect(outcomes.map((o) => o.outcome).sort()).toEqual([WakeOutcome.WAKE_OUTCOME_STARTED, WakeOutcome.WAKE_OUTCOME_ALREADY_RUNNING].sort());
    await quiet.waitFor(sessionId, ended);
    // Once the turn is over, and the instance has kept the session for its next input a while
    // (MH_IDLE_LINGER_MS, linger.test.ts), the lease is given back and nobody renews it.
    await eventually(async () => ((await quiet.log.client.getSession({ sessionId })).session?.lease === undefined ? true : undefined), "the lease given back");
    // A fixed wait on purpose: a quiet period proving no one renews the lease.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await quiet.log.client.getSession({ sessionId })).session?.lease).toBeUndefined();
  });

  it("answers NOTHING_TO_DO for a terminated session, taking no lease", async () => {
    const sessionId = await quiet.createSession();
    await quiet.log.client.emitEvent({ sessionId, event: newEvent("session.status_terminated", {}) });
    const { outcome } = await quiet.harnesses[0]!.supervisor.wake(sessionId);
    expect(outcome).toBe(WakeOutcome.WAKE_OUTCOME_NOTHING_TO_DO);
    expect((await quiet.log.client.getSession({ sessionId })).session?.lease).toBeUndefined();
  });

  it("lets exactly one of two instances drive a session", async () => {
    const second = await quiet.addHarness();
    const sessionId = await quiet.createSession();
    await quiet.log.client.emitEvent({ sessionId, event: userMessage("[scenario:slow] both of you") });
    const outcomes = await Promise.all([quiet.harnesses[0]!.supervisor.wake(sessionId), second.supervisor.wake(sessionId)]);
    const started = outcomes.filter((o) => o.outcome === WakeOutcome.WAKE_OUTCOME_STARTED);
    expect(started).toHaveLength(1);
    const events = await quiet.waitFor(sessionId, ended);
    expect(events.filter((e) => e.type === "agent.message")).toHaveLength(1);
    expect(events.filter((e) => e.type === "span.model_request_start")).toHaveLength(1);
  });
});
