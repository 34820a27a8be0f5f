/**
 * The horizon is exact: over a long compacting session (tool calls, large outputs, user input that
 * arrives while a request streams, budget changes, many compactions), at every event the events
 * from the horizon on give the same next step (under a token budget and a spend budget too), the
 * same usage and budget, the same compaction decision and the same model request as the whole log
 * does, and the horizon moves forward, so the view stays bounded.
 */
import { newEvent } from "@metaharness/events";
import { StopReasonType, type AgentConfig, type Event } from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import { budgetInForce, NO_LIMITS, usageBeforeIdle, usageTotals, type Limits } from "../budget.js";
import { lastStatus, nextStep } from "../state.js";
import { compactionStrategy, type Summarize } from "./compaction.js";
import { horizon, horizonOf } from "./horizon.js";
import type { ContextInput } from "./strategy.js";

const text = (t: string) => [{ block: { $case: "text" as const, value: { text: t } } }];
const agent: AgentConfig = { model: "claude-offline-test", system: "sys", tools: [], tokenBudget: 0, contextStrategy: "compaction", contextWindowTokens: 3_000, maxTokens: 0, explicitTools: true, listPrice: undefined, budget: undefined };
const usage = { inputTokens: 100, outputTokens: 10, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 };
const summarize: Summarize = () => Promise.resolve({ text: "SUMMARY", usage });
const price = { input: 3, output: 15, cacheRead: 0.3, cacheWrite5m: 3.75, cacheWrite1h: 6 };
const limits: Limits = { tokens: 0, price, budget: { maxListCost: { amount: "1000", currency: "USD" } } };

describe("the horizon of a compacting session", () => {
  it("gives the same decisions and requests as the whole log, and moves forward", async () => {
    const log: Event[] = [];
    const horizons: number[] = [];
    const input = (events: readonly Event[]): ContextInput => ({ events, agent, tools: [] });
    const push = (...events: Event[]): void => {
      for (const e of events) log.push({ ...e, seq: log.length + 1 });
      const h = horizonOf(log);
      horizons.push(h);
      const view = log.filter((e) => e.seq >= h);
      expect(usageTotals(view)).toEqual(usageTotals(log));
      expect(budgetInForce(view, limits.budget)).toEqual(budgetInForce(log, limits.budget));
      // Budgets the session has just used up: only the usage before the horizon reaches them.
      const used = usageTotals(log);
      const tokens = Math.max(1, used.inputTokens + used.outputTokens + used.cacheReadInputTokens + used.cacheCreationInputTokens);
      for (const l of [NO_LIMITS, limits, { tokens }]) expect(nextStep(view, l)).toEqual(nextStep(log, l));
      expect(usageBeforeIdle(view, limits, false)?.payload).toEqual(usageBeforeIdle(log, limits, false)?.payload);
      // The loop appends session.status_running only when the session is not running.
      expect(lastStatus(view)).toEqual(lastStatus(log));
      expect(compactionStrategy.compaction?.needed(input(view))).toBe(compactionStrategy.compaction?.needed(input(log)));
      expect(compactionStrategy.build(input(view))).toEqual(compactionStrategy.build(input(log)));
    };
    for (let turn = 1; turn <= 45; turn++) {
      push(newEvent("user.message", { content: text(`turn ${turn}: ${"u".repeat(200)}`) }));
      push(newEvent("session.status_running", {}));
      // Every seventh turn is long: its compactions cut inside it.
      const requests = turn % 7 === 0 ? 8 : 2;
      for (let request = 0; request < requests; request++) {
        const last = request === requests - 1;
        const start = newEvent("span.model_request_start", { model: "m" });
        push(start);
        const c = await compactionStrategy.compaction?.run(input(log), false, summarize);
        if (c !== undefined) push(c);
        // Input that arrives while the request streams: the model sees it after the response.
        if ((turn + request) % 3 === 0 && !last) push(newEvent("user.message", { content: text(`meanwhile ${turn}`) }));
        const use = newEvent("agent.tool_use", { name: "bash", input: { command: `cat ${turn}` }, evaluatedPermission: 0, sandboxId: "" });
        const said = newEvent("agent.message", { content: text(`done ${turn}`) });
        push(last ? said : use, newEvent("span.model_request_end", { modelRequestStartId: start.id, isError: false, modelUsage: usage, stopReason: last ? "end_turn" : "tool_use" }));
        if (!last) push(newEvent("agent.tool_result", { toolUseId: use.id, content: text(`${turn}: ${"o".repeat(1_500)}`), isError: false }));
      }
      // As the loop does: the usage snapshot before the idle, and now and then a budget change.
      const snapshot = usageBeforeIdle(log, limits, false);
      if (snapshot !== undefined) push(snapshot);
      push(newEvent("session.status_idle", { stopReason: { type: StopReasonType.STOP_REASON_TYPE_END_TURN, eventIds: [] } }));
      if (turn % 11 === 0) push(newEvent("session.updated", { budget: { limit: { maxListCost: { amount: String(1_000 + turn), currency: "USD" } } }, title: undefined, metadata: {}, agent: undefined }));
    }
    const compactions = log.filter((e) => e.payload?.$case === "agentThreadContextCompacted");
    expect(compactions.length).toBeGreaterThan(10);
    // Forward only, and the view holds a few turns, not the session.
    expect(horizons).toEqual([...horizons].sort((a, b) => a - b));
    expect(log.length - horizons.at(-1)!).toBeLessThan(60);
  }, 60_000);

  it("holds the whole request the cut falls inside, whose user input the model saw after its response", async () => {
    const log: Event[] = [];
    const push = (...events: Event[]): void => void log.push(...events.map((e, i) => ({ ...e, seq: log.length + i + 1 })));
    const input = (events: readonly Event[]): ContextInput => ({ events, agent: { ...agent, contextWindowTokens: 2_000 }, tools: [] });
    const start = (): Event => newEvent("span.model_request_start", { model: "m" });
    const end = (s: Event, stopReason: string): Event => newEvent("span.model_request_end", { modelRequestStartId: s.id, isError: false, modelUsage: usage, stopReason });
    const [s0, s1, s2, s3] = [start(), start(), start(), start()];
    const use = newEvent("agent.tool_use", { name: "bash", input: { command: "ls" }, evaluatedPermission: 0, sandboxId: "" });
    const idle = () => newEvent("session.status_idle", { stopReason: { type: StopReasonType.STOP_REASON_TYPE_END_TURN, eventIds: [] } });
    push(newEvent("user.message", { content: text("hello") }), newEvent("session.status_running", {}), s0, newEvent("agent.message", { content: text("hi") }), end(s0, "end_turn"));
    push(usageBeforeIdle(log, NO_LIMITS, false)!, idle());
    const snapshot = log.length - 2;
    push(newEvent("user.message", { content: text(`first: ${"u".repeat(8_000)}`) }), newEvent("session.status_running", {}), s1);
    push(newEvent("user.message", { content: text("meanwhile") }), use, end(s1, "tool_use"));
    push(newEvent("agent.tool_result", { toolUseId: use.id, content: text("a.txt"), isError: false }), s2, newEvent("agent.message", { content: text("done") }), end(s2, "end_turn"));
    push(usageBeforeIdle(log, NO_LIMITS, false)!, idle());
    push(newEvent("user.message", { content: text("next") }), newEvent("session.status_running", {}), s3);
    const c = await compactionStrategy.compaction?.run(input(log), false, summarize);
    const first = log.findIndex((e) => e.id === s1.id);
    expect(c?.payload?.$case === "agentThreadContextCompacted" && Number(c.payload.value.throughSeq)).toBe(log[first]?.seq);
    push(c!);
    // The request the cut falls inside, and the session.usage before it (the usage up to there).
    expect(horizonOf(log)).toBe(log[snapshot]?.seq);
    const view = log.filter((e) => e.seq >= horizonOf(log));
    expect(compactionStrategy.build(input(view))).toEqual(compactionStrategy.build(input(log)));
  });

  it("starts at the log's first event without a compaction, or without an idle before it", () => {
    expect(horizon({ compaction: undefined, idleBefore: undefined, requestStart: undefined })).toBe(1);
    expect(horizon({ compaction: { throughSeq: 30 }, idleBefore: undefined, requestStart: 25 })).toBe(1);
    expect(horizon({ compaction: { throughSeq: 30 }, idleBefore: 35, requestStart: 25 })).toBe(25);
    expect(horizon({ compaction: { throughSeq: 30 }, idleBefore: 20, requestStart: 25 })).toBe(20);
    expect(horizon({ compaction: { throughSeq: 0 }, idleBefore: 20, requestStart: undefined })).toBe(1);
  });
});
