/**
 * A long SDK session's turn time: TURNS turns through the official SDK against the whole stack
 * (gateway, session log on Postgres, harness, the offline model with a real window of WINDOW
 * tokens), under the default context strategy (compaction), as long-session.test.ts runs them.
 * Each turn is timed from the send to the idle the stream delivers, and the figures are given per
 * hundred turns (p50 / p95), with the first hundred as the floor: a turn's cost should be bounded
 * by what the model sees, not by how long the log is, so the last hundred should cost what the
 * first did. Run it under `node --cpu-prof` to see where a turn's time goes.
 */
import { defineScenario, type StepContext, type StepSpec } from "@metaharness/offline-model";
import { startStack } from "../support/gateway.js";
import { turnDriver, windowedSession } from "../support/windowed-session.js";
import { atMost, latencyCells, LATENCY_COLUMNS, ms, runIfMain, type Bench, type BenchReport } from "./lib/report.js";
import { nowMs, summarize, type Summary } from "./lib/stats.js";

const TURNS = Number(process.env["MH_BENCH_LONG_TURNS"] ?? 1_000);
const WINDOW = 4_000;
const BUCKET = 100;
const FILLER = "lorem ipsum dolor sit amet ".repeat(12);
/** The last hundred turns may cost this much more than the first hundred (p50). */
const MAX_GROWTH = 1.5;

function step(ctx: StepContext): StepSpec {
  if (ctx.lastUserText.includes("[context compaction]")) return { text: "Summary: the user sends numbered turns of filler." };
  return { text: `ok ${ctx.lastUserText.slice(0, 12)}` };
}

async function runBench(): Promise<BenchReport> {
  const stack = await startStack({ scenarios: [defineScenario("long-bench", [step], { onExhausted: "repeat-last" })], modelWindowTokens: WINDOW, vault: false });
  const turnMs: number[] = [];
  let compactions = 0;
  let errors = 0;
  try {
    const sdk = stack.client().sdk;
    const sessionId = await windowedSession(sdk, { name: "long-bench", model: "claude-offline-long", scenario: "long-bench", windowTokens: WINDOW });
    const driver = await turnDriver(sdk, sessionId, (e) => {
      if (e.type === "agent.thread_context_compacted") compactions++;
      if (e.type === "session.error") errors++;
    });
    for (let turn = 1; turn <= TURNS; turn++) {
      const began = nowMs();
      const idle = await driver.turn(`turn ${turn}: ${FILLER}`);
      turnMs.push(nowMs() - began);
      if (idle.type !== "session.status_idle" || idle.stop_reason.type !== "end_turn") throw new Error(`turn ${turn} ended with ${JSON.stringify(idle)}`);
      if (turn % BUCKET === 0) console.log(`  turn ${turn}: last ${BUCKET} p50 ${ms(summarize(turnMs.slice(-BUCKET)).p50)} ms`);
    }
    driver.close();
  } finally {
    await stack.stop();
  }
  const buckets: Array<[string, Summary]> = [];
  for (let from = 0; from < turnMs.length; from += BUCKET) buckets.push([`${from + 1}-${Math.min(from + BUCKET, turnMs.length)}`, summarize(turnMs.slice(from, from + BUCKET))]);
  const first = buckets[0]?.[1];
  const last = buckets[buckets.length - 1]?.[1];
  const growth = first === undefined || last === undefined ? Number.NaN : last.p50 / first.p50;
  const params = `window ${WINDOW} tokens, ${TURNS} turns of ~${Math.round(FILLER.length / 4)} tokens, compaction (the default)`;
  return {
    name: "long-session",
    title: "turn time of a long SDK session",
    tables: [
      {
        title: `turn time, send to idle, per ${BUCKET} turns (${params}; ${compactions} compactions, ${errors} session errors)`,
        columns: ["turns", ...LATENCY_COLUMNS, "p50 / first p50"],
        rows: buckets.map(([label, s]) => [label, ...latencyCells(s), first === undefined ? "-" : (s.p50 / first.p50).toFixed(2)]),
      },
    ],
    checks: [atMost(`last ${BUCKET} turns' p50 over the first ${BUCKET}'s (${params})`, growth, MAX_GROWTH, "x")],
    notes: [params],
    data: { turnMs, compactions, errors },
  };
}

export const longSessionBench: Bench = { name: "long-session", title: "turn time of a long SDK session", run: runBench };

runIfMain(longSessionBench, import.meta.url);
