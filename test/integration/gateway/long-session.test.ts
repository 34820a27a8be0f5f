/**
 * A long SDK session: 1,000 turns through the official SDK against the offline model with a real
 * context window (4,000 tokens here), under the default context strategy (compaction). Every turn
 * ends with end_turn, none with an error: before a request would pass the threshold the harness
 * asks the model for a summary and continues from it (agent.thread_context_compacted, in the SDK's
 * exact shape), so no request is refused as too long. The last turn asks for a word said in the
 * first one, long since compacted away: the model reads it back by position with
 * read_session_events and answers with it. A turn the model still refuses after its compaction
 * ends with compaction_limit_reached_error, and the session takes its next turn; the summaries'
 * tokens are in the session's usage.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { defineScenario, type StepContext, type StepSpec } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../../support/gateway.js";
import { turnDriver, windowedSession } from "../../support/windowed-session.js";

const TURNS = 1_000;
const WINDOW = 4_000;
const SECRET = "PAPAYA-7";
const FILLER = "lorem ipsum dolor sit amet ".repeat(12);
type SessionEvent = Anthropic.Beta.Sessions.BetaManagedAgentsStreamSessionEvents;

/** The scripted model: summarizes when asked, re-reads the log when asked to recall, else acknowledges. */
function longStep(ctx: StepContext): StepSpec {
  const fresh = ctx.lastToolResult !== undefined && ctx.lastToolResult.messageIndex === ctx.request.messages.length - 1;
  if (ctx.lastUserText.includes("[context compaction]")) return { text: "Summary: the user sends numbered turns of filler; the first turn holds a secret word." };
  if (fresh && ctx.lastToolResult?.toolName === "read_session_events") {
    const found = /secret word (\S+)/.exec(ctx.lastToolResult.content)?.[1] ?? "nothing";
    return { text: `The secret word of the first turn was ${found}.` };
  }
  if (ctx.lastUserText.startsWith("recall")) {
    return { toolUses: [{ name: "read_session_events", input: { after_seq: 0, limit: 1, types: ["user.message"] } }] };
  }
  return { text: `ok ${ctx.lastUserText.slice(0, 12)}` };
}

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ scenarios: [defineScenario("long", [longStep], { onExhausted: "repeat-last" })], modelWindowTokens: WINDOW, vault: false });
});
afterAll(async () => {
  await stack?.stop();
});

describe("a long session", () => {
  it(`runs ${TURNS} turns under a ${WINDOW}-token window, compacting, and re-reads the first turn by position`, async () => {
    const sdk = stack.client().sdk;
    const sessionId = await windowedSession(sdk, { name: "long", model: "claude-offline-long", scenario: "long", windowTokens: WINDOW });
    const seen: SessionEvent[] = [];
    const driver = await turnDriver(sdk, sessionId, (e) => seen.push(e));

    const started = Date.now();
    for (let turn = 1; turn <= TURNS; turn++) {
      const text = turn === 1 ? `turn 1: remember the secret word ${SECRET}` : turn === TURNS ? "recall the secret word of the first turn" : `turn ${turn}: ${FILLER}`;
      const idle = await driver.turn(text);
      expect(idle.type === "session.status_idle" && idle.stop_reason.type, `turn ${turn}`).toBe("end_turn");
      if (turn % 100 === 0) console.log(`turn ${turn} after ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
    driver.close();
    const seconds = (Date.now() - started) / 1000;

    const compactions = seen.filter((e) => e.type === "agent.thread_context_compacted");
    console.log(`${TURNS} turns in ${seconds.toFixed(1)} s, ${compactions.length} compactions (window ${WINDOW} tokens)`);
    expect(seen.filter((e) => e.type === "session.error")).toEqual([]);
    expect(compactions.length).toBeGreaterThan(10);
    // The SDK's exact shape: the event is a marker.
    for (const c of compactions) expect(Object.keys(c).sort()).toEqual(["id", "processed_at", "type"]);
    const read = seen.filter((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsAgentToolUseEvent => e.type === "agent.tool_use");
    expect(read.map((e) => [e.name, e.input])).toEqual([["read_session_events", { after_seq: 0, limit: 1, types: ["user.message"] }]]);
    const last = seen.filter((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsAgentMessageEvent => e.type === "agent.message").at(-1);
    expect(last?.content).toEqual([{ type: "text", text: `The secret word of the first turn was ${SECRET}.` }]);
  }, 420_000);

  it("compacts and retries once when the model says the prompt is too long (the agent believes its window larger)", async () => {
    const sdk = stack.client().sdk;
    const session = { id: await windowedSession(sdk, { name: "too-long", model: "claude-offline-long", scenario: "long", windowTokens: 100_000 }) };
    const big = "x".repeat(4 * 1_200);
    for (let turn = 1; turn <= 6; turn++) {
      await sdk.beta.sessions.events.send(session.id, { events: [{ type: "user.message", content: [{ type: "text", text: `turn ${turn}: ${big}` }] }] });
      await stack.brain.waitFor(session.id, (events) => events.filter((e) => e.type === "session.status_idle").length === turn);
    }
    const events: SessionEvent[] = [];
    for await (const e of sdk.beta.sessions.events.list(session.id)) events.push(e);
    const idles = events.filter((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsSessionStatusIdleEvent => e.type === "session.status_idle");
    expect(idles.map((e) => e.stop_reason.type)).toEqual(Array(6).fill("end_turn"));
    expect(events.filter((e) => e.type === "session.error")).toEqual([]);
    expect(events.filter((e) => e.type === "agent.thread_context_compacted").length).toBeGreaterThan(0);
  }, 120_000);

  it("ends a turn the model still refuses after compacting with compaction_limit_reached_error, counts the summaries in the usage, and takes the next turn", async () => {
    const { sdk } = stack.client(undefined, { extensions: true });
    // The agent believes its window 100,000 tokens; the model's is 4,000: a message of ~6,000
    // tokens is refused, compacted (the turns before it summarized), and refused again.
    const session = { id: await windowedSession(sdk, { name: "limit", model: "claude-offline-long", scenario: "long", windowTokens: 100_000 }) };
    const turns = [`turn 1: ${FILLER}`, `turn 2: ${FILLER}`, `turn 3: ${"y".repeat(4 * 6_000)}`, "turn 4: still there?"];
    for (const [i, text] of turns.entries()) {
      await sdk.beta.sessions.events.send(session.id, { events: [{ type: "user.message", content: [{ type: "text", text }] }] });
      await stack.brain.waitFor(session.id, (events) => events.filter((e) => e.type === "session.status_idle").length === i + 1);
    }
    const events: SessionEvent[] = [];
    for await (const e of sdk.beta.sessions.events.list(session.id)) events.push(e);
    const idles = events.filter((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsSessionStatusIdleEvent => e.type === "session.status_idle");
    expect(idles.map((e) => e.stop_reason.type)).toEqual(["end_turn", "end_turn", "retries_exhausted", "end_turn"]);
    const errors = events.filter((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsSessionErrorEvent => e.type === "session.error");
    expect(errors.map((e) => [e.error.type, e.error.retry_status.type])).toEqual([["compaction_limit_reached_error", "exhausted"]]);
    expect(errors[0]?.error.message).toContain("still said the prompt is too long");
    // The third turn compacted once before giving up; the fourth compacts the large message away and answers.
    const seqOf = (e: SessionEvent): number => events.indexOf(e);
    const compactions = events.filter((e) => e.type === "agent.thread_context_compacted");
    expect(compactions.filter((c) => seqOf(c) > seqOf(idles[1]!) && seqOf(c) < seqOf(errors[0]!)).length).toBe(1);
    expect(compactions.filter((c) => seqOf(c) > seqOf(idles[2]!)).length).toBeGreaterThan(0);
    const last = events.filter((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsAgentMessageEvent => e.type === "agent.message").at(-1);
    expect(seqOf(last!)).toBeGreaterThan(seqOf(idles[2]!));

    // The session's usage counts every model request: the turns' and the summaries'.
    type Usage = { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number };
    const usages = events.flatMap((e): Usage[] => {
      const x = e as unknown as { type: string; model_usage?: Usage; summary_usage?: Usage };
      return x.type === "span.model_request_end" && x.model_usage !== undefined ? [x.model_usage] : x.type === "agent.thread_context_compacted" && x.summary_usage !== undefined ? [x.summary_usage] : [];
    });
    const summaries = compactions.map((c) => (c as unknown as { summary_usage: Usage }).summary_usage).filter((u) => u.input_tokens > 0);
    expect(summaries.length).toBeGreaterThanOrEqual(2);
    const sum = (pick: (u: Usage) => number | undefined): number => usages.reduce((a, u) => a + (pick(u) ?? 0), 0);
    const retrieved = await sdk.beta.sessions.retrieve(session.id);
    expect(retrieved.usage).toMatchObject({
      input_tokens: sum((u) => u.input_tokens),
      output_tokens: sum((u) => u.output_tokens),
      cache_read_input_tokens: sum((u) => u.cache_read_input_tokens),
    });
  }, 120_000);
});
