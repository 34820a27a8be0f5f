/**
 * Context strategies over a long session: TURNS turns, each a tool call whose output is large,
 * against the offline model with a real window (WINDOW tokens; a longer prompt is its 400 "prompt
 * is too long"), under replay, windowed and compaction, built by the harness's own strategies
 * in-process (no services: what is measured is the requests, not the transport). Per strategy:
 * turns completed (replay stops at its first refused request), input tokens per request p50/p95,
 * the cache-read share of input, and the token cost relative to replay over the turns replay
 * completed (input 1, cache write 1.25, cache read 0.1, output 5, the API's price ratios).
 */
import Anthropic from "@anthropic-ai/sdk";
import { newEvent } from "@metaharness/events";
import { STRATEGIES, type ContextStrategy } from "@metaharness/harness";
import { defineScenario, startOfflineModel, type StepContext, type StepSpec } from "@metaharness/offline-model";
import type { AgentConfig, Event, ModelUsage } from "@metaharness/proto";
import { atLeast, runIfMain, type Bench, type BenchReport, type Check } from "./lib/report.js";
import { percentile } from "./lib/stats.js";

const TURNS = Number(process.env["MH_BENCH_CONTEXT_TURNS"] ?? 1_000);
const WINDOW = 20_000;
const OUTPUT_CHARS = 4_000;
const MODEL = "claude-offline-bench";
const PRICE = { input: 1, cacheWrite: 1.25, cacheRead: 0.1, output: 5 } as const;

function step(ctx: StepContext): StepSpec {
  if (ctx.lastUserText.includes("[context compaction]")) return { text: "Summary: the user asked for one file per turn; each was read." };
  const fresh = ctx.lastToolResult !== undefined && ctx.lastToolResult.messageIndex === ctx.request.messages.length - 1;
  if (fresh) return { text: "Read it." };
  return { text: "Reading.", toolUses: [{ name: "bash", input: { command: `cat file-${ctx.lastUserText.length}` } }] };
}

const BASH: Anthropic.Tool = { name: "bash", description: "Run a command", input_schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } };

interface Run {
  readonly strategy: string;
  turns: number;
  readonly inputPerRequest: number[];
  readonly cost: number[];
  /** Cost of the whole session after each turn (summaries included). */
  readonly costByTurn: number[];
  cacheRead: number;
  input: number;
  compactions: number;
  failure: string;
}

const text = (t: string) => [{ block: { $case: "text" as const, value: { text: t } } }];

function costOf(u: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number | null; cache_creation_input_tokens?: number | null }): number {
  return u.input_tokens * PRICE.input + (u.cache_creation_input_tokens ?? 0) * PRICE.cacheWrite + (u.cache_read_input_tokens ?? 0) * PRICE.cacheRead + u.output_tokens * PRICE.output;
}

async function runStrategy(sdk: Anthropic, strategy: ContextStrategy): Promise<Run> {
  const agent: AgentConfig = { model: MODEL, system: "[scenario:context-bench] You read files.", tools: [], tokenBudget: 0, contextStrategy: strategy.name, contextWindowTokens: WINDOW, maxTokens: 1024, explicitTools: true, listPrice: undefined, budget: undefined };
  const events: Event[] = [];
  let seq = 0;
  const push = (e: Event): void => void events.push({ ...e, seq: ++seq });
  const run: Run = { strategy: strategy.name, turns: 0, inputPerRequest: [], cost: [], costByTurn: [], cacheRead: 0, input: 0, compactions: 0, failure: "" };
  const tools = [BASH, ...strategy.ownTools];
  const send = async (params: ReturnType<ContextStrategy["build"]>): Promise<Anthropic.Message> => {
    const message = await sdk.messages.create({ ...params, model: MODEL, max_tokens: 1024, stream: false });
    const u = message.usage;
    const input = u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0);
    run.inputPerRequest.push(input);
    run.input += input;
    run.cacheRead += u.cache_read_input_tokens ?? 0;
    run.cost.push(costOf(u));
    return message;
  };
  const summarize = async (params: ReturnType<ContextStrategy["build"]>): Promise<{ text: string; usage: ModelUsage }> => {
    const m = await send(params);
    const usage = { inputTokens: m.usage.input_tokens, outputTokens: m.usage.output_tokens, cacheCreationInputTokens: m.usage.cache_creation_input_tokens ?? 0, cacheReadInputTokens: m.usage.cache_read_input_tokens ?? 0 };
    return { text: m.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n"), usage };
  };
  try {
    for (let turn = 1; turn <= TURNS; turn++) {
      push(newEvent("user.message", { content: text(`read the next file, turn ${turn}`) }));
      for (let request = 0; request < 2; request++) {
        const input = { events, agent, tools };
        if (strategy.compaction?.needed(input) === true) {
          const c = await strategy.compaction.run(input, false, summarize);
          if (c !== undefined) {
            push(c);
            run.compactions++;
          }
        }
        const message = await send(strategy.build({ events, agent, tools }));
        for (const block of message.content) {
          if (block.type === "text") push(newEvent("agent.message", { content: text(block.text) }));
          if (block.type === "tool_use") {
            push(newEvent("agent.tool_use", { name: block.name, input: block.input as Record<string, unknown>, evaluatedPermission: 0, sandboxId: "" }, { id: block.id }));
            const output = `${turn}: ${"x".repeat(OUTPUT_CHARS)}`;
            push(newEvent("agent.tool_result", { toolUseId: block.id, content: text(output), isError: false }, { id: `${block.id}.result` }));
          }
        }
      }
      run.turns = turn;
      run.costByTurn.push(run.cost.reduce((a, b) => a + b, 0));
    }
  } catch (err) {
    run.failure = err instanceof Error ? err.message.slice(0, 120) : String(err);
  }
  return run;
}

async function runBench(): Promise<BenchReport> {
  const model = await startOfflineModel({ windowTokens: WINDOW, scenarios: [defineScenario("context-bench", [step], { onExhausted: "repeat-last" })] });
  const sdk = new Anthropic({ baseURL: model.url, apiKey: "offline", maxRetries: 0 });
  const runs: Run[] = [];
  try {
    for (const name of ["replay", "windowed", "compaction"]) runs.push(await runStrategy(sdk, STRATEGIES.get(name)!));
  } finally {
    await model.close();
  }
  const replay = runs[0]!;
  // The session's cost after the last turn replay completed (summaries included).
  const costUntil = (r: Run): number => r.costByTurn[replay.turns - 1] ?? 0;
  const params = `window ${WINDOW} tokens, ${TURNS} turns, 2 requests a turn, tool output ${OUTPUT_CHARS} chars`;
  const rows = runs.map((r) => {
    const sorted = [...r.inputPerRequest].sort((a, b) => a - b);
    return [
      r.strategy,
      `${r.turns}/${TURNS}`,
      percentile(sorted, 50),
      percentile(sorted, 95),
      `${((100 * r.cacheRead) / Math.max(r.input, 1)).toFixed(1)}%`,
      (costUntil(r) / Math.max(costUntil(replay), 1)).toFixed(2),
      r.compactions,
      r.failure === "" ? "-" : r.failure,
    ];
  });
  const checks: Check[] = runs.filter((r) => r.strategy !== "replay").map((r) => atLeast(`${r.strategy}: turns completed (${params})`, r.turns, TURNS, "turns"));
  return {
    name: "context",
    title: "context strategies over a long session with large tool outputs",
    tables: [
      {
        title: `per strategy (${params}; cost: input 1, cache write 1.25, cache read 0.1, output 5, over the ${replay.turns} turns replay completed)`,
        columns: ["strategy", "turns", "input tok/request p50", "p95", "cache-read share", "cost vs replay", "compactions", "first failure"],
        rows,
      },
    ],
    checks,
    notes: [params],
    data: { runs: runs.map((r) => ({ ...r, inputPerRequest: undefined, cost: undefined, costByTurn: undefined })) },
  };
}

export const contextBench: Bench = { name: "context", title: "context strategies over a long session", run: runBench };

runIfMain(contextBench, import.meta.url);
