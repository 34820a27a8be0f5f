/**
 * What the gateway costs a text-only turn driven through the official SDK (issue 31: the 15 ms
 * target is per turn across all services, the gateway among them): the session log, one harness
 * and the gateway each as its own process (scale-stack.ts), the gateway's Wake RPC reaching the
 * harness (no wake group), sessions in a closed loop as harness-scale.ts drives them (the stream
 * opened once with token previews, then sessions.events.send of a user.message and the stream
 * read to session.status_idle, again and again). Prints the gateway's CPU per turn beside the
 * other processes', and what the gateway sent per turn, counted in its process (call-counter.ts):
 * gRPC calls by method and Postgres statements, which do not depend on the machine's load. The
 * gateway logs at its default level (info). `--cpu-prof` writes its profile to
 * bench/results/cpu-prof/; `--quick` is a short check. `npm run bench -- gateway-turn`.
 */
import { mkdirSync } from "node:fs";
import { defineScenario } from "@metaharness/offline-model";
import { EVENT_TEXT } from "./lib/service.js";
import { ms, runIfMain, type Bench, type BenchReport } from "./lib/report.js";
import { callCounter } from "./lib/call-counts.js";
import { measure, type PointFigures } from "./harness-scale.js";
import { startScaleStack } from "./scale-stack.js";

const SCENARIO = "harness-scale";
const MODEL_TTFT_MS = 200;
const SESSIONS = 16;
const FULL = { warmupSeconds: 8, seconds: 25 };
const QUICK = { warmupSeconds: 3, seconds: 8 };

const SERVICES = ["gateway", "sessionLog", "harness-1", "postgres", "kafka"] as const;

async function run(): Promise<BenchReport> {
  const phase = process.argv.includes("--quick") ? QUICK : FULL;
  const profDir = process.argv.includes("--cpu-prof") ? new URL("./results/cpu-prof/", import.meta.url).pathname : undefined;
  if (profDir !== undefined) mkdirSync(profDir, { recursive: true });
  // Not with a profile: the counter's loader runs on a thread of its own, whose profile would be
  // written over the main thread's (both take the one --cpu-prof-name).
  const counter = profDir === undefined ? callCounter("gateway") : undefined;
  const scenarios = [defineScenario(SCENARIO, [{ text: EVENT_TEXT, ttftMs: MODEL_TTFT_MS, tokensPerSecond: 0 }], { onExhausted: "repeat-last" })];
  const stack = await startScaleStack({
    scenarios,
    harnesses: 1,
    gateway: true,
    kafkaWake: false,
    gatewayNodeArgs: [...(counter?.nodeArgs ?? []), ...(profDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=gateway-${SESSIONS}.cpuprofile`])],
    gatewayEnv: { ...counter?.env, MH_LOG_LEVEL: "info" },
  });
  let f: PointFigures;
  try {
    const child = stack.gateway!.child;
    f = await measure(stack, { harnesses: 1, sessions: SESSIONS }, phase, counter === undefined ? undefined : () => counter.read(child));
  } finally {
    await stack.stop();
    await counter?.dispose();
  }
  const load = `${f.load[0].toFixed(1)}-${f.load[1].toFixed(1)}`;
  const services = SERVICES.reduce((n, k) => n + (f.cpuMsPerTurn[k] ?? 0), 0);
  const counts = Object.entries(f.countsPerTurn).sort((a, b) => a[0].localeCompare(b[0]));
  const grpc = counts.filter(([k]) => k.startsWith("grpc ")).reduce((n, [, v]) => n + v, 0);
  const sql = counts.filter(([k]) => k.startsWith("sql ")).reduce((n, [, v]) => n + v, 0);
  console.log(`  gateway ${ms(f.cpuMsPerTurn["gateway"] ?? NaN)} ms CPU / turn, ${f.turnsPerSecond.toFixed(1)} turns/s, gRPC ${grpc.toFixed(2)} + SQL ${sql.toFixed(2)} / turn, load ${load}`);
  return {
    name: "gateway-turn",
    title: "the gateway's CPU, gRPC calls and statements per text-only SDK turn",
    tables: [
      {
        title: `CPU ms per turn by process (${SESSIONS} sessions through the SDK, model TTFT ${MODEL_TTFT_MS} ms, ${phase.seconds} s after ${phase.warmupSeconds} s warm-up)`,
        columns: ["turns", "errors", "turns/s", "TTFT p50 / p95 ms", "gateway", "session log", "harness", "postgres", "kafka", "services", "gateway % of services", "load 1m before-after"],
        rows: [
          [
            f.turns,
            f.errors,
            f.turnsPerSecond.toFixed(1),
            `${ms(f.ttftMs.p50)} / ${ms(f.ttftMs.p95)}`,
            ...SERVICES.map((k) => ms(f.cpuMsPerTurn[k] ?? NaN)),
            ms(services),
            `${(((f.cpuMsPerTurn["gateway"] ?? 0) / services) * 100).toFixed(0)}%`,
            load,
          ],
        ],
      },
      {
        title: "sent by the gateway per turn (counted in its process over the window)",
        columns: ["what", "per turn"],
        rows: [...counts.map(([k, v]) => [k, v.toFixed(2)] as const), ["gRPC calls in all", grpc.toFixed(2)], ["Postgres statements in all", sql.toFixed(2)]],
      },
    ],
    checks: [],
    notes: [
      "session log, harness and gateway each run from their built dist/main.js; the offline model and the SDK clients in the bench process",
      profDir === undefined
        ? "the gateway runs with the call counter loaded (tsx's loader and a wrapper around grpc-js's and pg's call methods), in every run alike"
        : `no counts with --cpu-prof; the gateway's profile (start-up and warm-up included): ${profDir}gateway-${SESSIONS}.cpuprofile`,
      "a stream is opened once per session (its WatchEvents is counted once, in the warm-up), so the counts per turn are what events.send and the stream's frames cost",
    ],
    data: { phase, figures: f },
  };
}

export const gatewayTurnBench: Bench = { name: "gateway-turn", title: "the gateway's CPU, gRPC calls and statements per text-only SDK turn", run };

runIfMain(gatewayTurnBench, import.meta.url);
