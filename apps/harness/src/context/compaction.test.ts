/**
 * The compaction strategy on built histories: nothing happens under the threshold; over it, old
 * tool results are cleared first (no model call) with a marker naming their seq; when that is not
 * enough the model's summary replaces the older turns at a safe cut (no tool call split), the
 * request then fits, and the summary carries its own cache breakpoint. (Compactions in a row and the
 * API's "prompt is too long" are the loop's: loop/compact-step.test.ts.)
 */
import { newEvent } from "@metaharness/events";
import type { AgentConfig, Event } from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import { compact, compactionStrategy, sizeOf, type Summarize } from "./compaction.js";
import { compactionSettings } from "./compaction-settings.js";
import { clearedMarker } from "./compaction-view.js";

const text = (t: string) => [{ block: { $case: "text" as const, value: { text: t } } }];
let seq = 0;
const at = (e: Event): Event => ({ ...e, seq: ++seq });
const user = (t: string) => at(newEvent("user.message", { content: text(t) }));
const said = (t: string) => at(newEvent("agent.message", { content: text(t) }));
const use = () => at(newEvent("agent.tool_use", { name: "bash", input: { command: "cat big" }, evaluatedPermission: 0, sandboxId: "" }));
const result = (u: Event, out: string) => at(newEvent("agent.tool_result", { toolUseId: u.id, content: text(out), isError: false }));

const agent = (window: number): AgentConfig => ({
  model: "claude-offline-test",
  system: "sys",
  tools: [],
  tokenBudget: 0,
  contextStrategy: "compaction",
  contextWindowTokens: window,
  maxTokens: 0,
  explicitTools: true,
  listPrice: undefined,
  budget: undefined,
});

/** `turns` turns of one tool call each, with `outputChars` of output. */
function history(turns: number, outputChars: number, chatChars = 40): Event[] {
  const out: Event[] = [];
  for (let i = 0; i < turns; i++) {
    const u = use();
    out.push(user(`turn ${i} ${"u".repeat(chatChars)}`), u, result(u, `${i}:${"o".repeat(outputChars)}`), said(`done ${i}`));
  }
  return out;
}

const noSummary: Summarize = () => Promise.reject(new Error("the model must not be asked"));
const summary: Summarize = () => Promise.resolve({ text: "SUMMARY", usage: { inputTokens: 9, outputTokens: 3, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 } });

describe("compaction", () => {
  it("does nothing while the request fits under the threshold", async () => {
    const input = { events: history(3, 100), agent: agent(10_000), tools: [] };
    expect(await compact(input, compactionSettings(input.agent), false, noSummary)).toBeUndefined();
  });

  it("decides on the request it builds: the one build() makes while it fits, none once it passes the threshold", () => {
    const fits = { events: history(3, 100), agent: agent(10_000), tools: [] };
    expect(compactionStrategy.compaction?.requestIfFits(fits)).toEqual(compactionStrategy.build(fits));
    expect(compactionStrategy.compaction?.needed(fits)).toBe(false);
    const over = { events: history(12, 1_200), agent: agent(6_000), tools: [] };
    expect(compactionStrategy.compaction?.requestIfFits(over)).toBeUndefined();
    expect(compactionStrategy.compaction?.needed(over)).toBe(true);
  });

  it("sends build()'s request at the threshold exactly, and none a token past it", () => {
    const events = history(3, 100);
    const size = sizeOf(compactionStrategy.build({ events, agent: agent(1_000_000), tools: [] }));
    // The smallest window whose threshold is the request's size, and the largest whose threshold is a token under it.
    const windowAt = (threshold: number): number => {
      let w = Math.ceil(threshold / 0.8);
      while (compactionSettings(agent(w)).thresholdTokens < threshold) w++;
      while (compactionSettings(agent(w - 1)).thresholdTokens >= threshold) w--;
      return w;
    };
    const atThreshold = { events, agent: agent(windowAt(size)), tools: [] };
    expect(compactionSettings(atThreshold.agent).thresholdTokens).toBe(size);
    expect(compactionStrategy.compaction?.requestIfFits(atThreshold)).toEqual(compactionStrategy.build(atThreshold));
    const past = { events, agent: agent(windowAt(size) - 1), tools: [] };
    expect(compactionSettings(past.agent).thresholdTokens).toBe(size - 1);
    expect(compactionStrategy.compaction?.requestIfFits(past)).toBeUndefined();
    expect(compactionStrategy.compaction?.needed(past)).toBe(true);
  });

  it("clears old tool results first, keeping the last three, without asking the model", async () => {
    const events = history(12, 1_200);
    const input = { events, agent: agent(6_000), tools: [] };
    const settings = compactionSettings(input.agent);
    expect(sizeOf(compactionStrategy.build(input))).toBeGreaterThan(settings.thresholdTokens);
    const event = await compact(input, settings, false, noSummary);
    expect(event?.payload?.$case).toBe("agentThreadContextCompacted");
    const c = event?.payload?.$case === "agentThreadContextCompacted" ? event.payload.value : undefined;
    const results = events.filter((e) => e.payload?.$case === "agentToolResult");
    expect(c?.throughSeq).toBe(0);
    expect(c?.clearedThroughSeq).toBe(results.at(-4)?.seq);
    const after = compactionStrategy.build({ ...input, events: [...events, at(event!)] });
    expect(sizeOf(after)).toBeLessThanOrEqual(settings.lowWaterTokens);
    const json = JSON.stringify(after.messages);
    expect(json).toContain(JSON.stringify(clearedMarker(results[0]!.seq)).slice(1, -1));
    expect(json).toContain(`11:${"o".repeat(50)}`);
    expect(json).not.toContain(`"text":"0:${"o".repeat(50)}`);
  });

  it("summarizes when clearing is not enough, cuts at a safe point, and the request then fits", async () => {
    const events = history(40, 10, 400);
    const input = { events, agent: agent(6_000), tools: [] };
    const settings = compactionSettings(input.agent);
    const event = await compact(input, settings, false, summary);
    const c = event?.payload?.$case === "agentThreadContextCompacted" ? event.payload.value : undefined;
    expect(c?.summary).toBe("SUMMARY");
    expect(c?.summaryUsage?.inputTokens).toBe(9);
    // The cut never separates a tool_use from its result.
    const cutEvent = events.find((e) => e.seq === Number(c?.throughSeq));
    expect(cutEvent?.payload?.$case).not.toBe("agentToolUse");
    const after = compactionStrategy.build({ ...input, events: [...events, at(event!)] });
    expect(sizeOf(after)).toBeLessThanOrEqual(settings.thresholdTokens);
    const first = after.messages[0];
    expect(first?.role).toBe("user");
    const lead = Array.isArray(first?.content) ? first.content[0] : undefined;
    expect(lead).toMatchObject({ type: "text", cache_control: { type: "ephemeral" } });
    expect(lead?.type === "text" ? lead.text : "").toContain("SUMMARY");
    expect(after.tools?.map((t) => ("name" in t ? t.name : ""))).toEqual(["read_session_events"]);
  });

  it("compacts when forced though under the threshold (the model said the prompt is too long)", async () => {
    const input = { events: history(6, 10, 400), agent: agent(100_000), tools: [] };
    const event = await compact(input, compactionSettings(input.agent), true, summary);
    expect(event?.payload?.$case).toBe("agentThreadContextCompacted");
  });
});
