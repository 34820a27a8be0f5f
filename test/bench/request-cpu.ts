/**
 * Request CPU: the microseconds of CPU a streamed model request costs in this process (the
 * offline model runs in its own, lib/offline-model-main.ts), layer by layer, in alternated rounds:
 * fetch and reading the body, the SDK's messages.create and its event iterator, and the model
 * client (its accumulation of the stream), each over Node's built-in fetch (undici) and over the
 * model client's lean fetch (node-fetch.ts). What the lean fetch was measured with (issue 31).
 *
 * Flags: `--rounds=8` and `--requests=200` (a round's requests per variant); `--base=<dir>`, the
 * directory of another build of @metaharness/model-client (a worktree's packages/model-client,
 * built), adds its client as "model-client base", alternated with the rest.
 * Standalone: `npx tsx bench/request-cpu.ts` from test/; in run.ts as `request-cpu`. No target.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import Anthropic from "@anthropic-ai/sdk";
import { createModelClient, createNodeFetch } from "@metaharness/model-client";
import type * as ModelClientPackage from "@metaharness/model-client";
import { numbersFlag, textFlag } from "./lib/flags.js";
import { runIfMain, type Bench } from "./lib/report.js";

type ModelClientModule = typeof ModelClientPackage;

const MODEL_SERVER = new URL("./lib/offline-model-main.ts", import.meta.url).pathname;
const WARMUP = 50;
const MODEL = "claude-offline-test";
const MESSAGES = [{ role: "user" as const, content: "[scenario:bench] hello" }];

interface OfflineModelProcess {
  readonly url: string;
  stop(): Promise<void>;
}

/** The offline model's own process: its URL, the first line it prints; its errors go to ours. */
async function startModelProcess(): Promise<OfflineModelProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", MODEL_SERVER], { stdio: ["pipe", "pipe", "inherit"] });
  const exited = once(child, "exit");
  const first = await createInterface({ input: child.stdout })[Symbol.asyncIterator]().next();
  if (first.done === true) throw new Error("the offline model exited before it listened");
  return {
    url: first.value,
    stop: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

/** The variants measured, by name: each makes one request and reads its answer whole. */
function variants(url: string, base: ModelClientModule | undefined): Map<string, () => Promise<unknown>> {
  const lean = createNodeFetch().fetch;
  const body = { model: MODEL, max_tokens: 1024, messages: MESSAGES };
  const json = JSON.stringify({ ...body, stream: true });
  const headers = { "content-type": "application/json", "x-api-key": "offline", "anthropic-version": "2023-06-01" };
  const rawFetch = async (f: typeof fetch): Promise<void> => {
    const res = await f(`${url}/v1/messages`, { method: "POST", headers, body: json });
    if (res.body === null) throw new Error("no body");
    let n = 0;
    // undici's body is a web stream, the lean fetch's the socket's data: both iterate as bytes.
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) n += chunk.length;
    if (n === 0) throw new Error("empty body");
  };
  const sdkOptions = { baseURL: url, apiKey: "offline", maxRetries: 0, openTelemetry: { traces: false } };
  const sdkUndici = new Anthropic(sdkOptions);
  const sdkLean = new Anthropic({ ...sdkOptions, fetch: lean });
  const sdkCreate = async (client: Anthropic): Promise<void> => {
    const stream = await client.messages.create({ ...body, stream: true });
    for await (const event of stream) void event;
  };
  const clientOptions = { baseURL: url, apiKey: "offline", model: MODEL, maxTokens: 1024 };
  const client = createModelClient(clientOptions);
  const baseClient = base?.createModelClient(clientOptions);
  const params = { messages: MESSAGES };
  return new Map<string, () => Promise<unknown>>([
    ["fetch undici", () => rawFetch(fetch)],
    ["fetch lean", () => rawFetch(lean)],
    ["sdk create undici", () => sdkCreate(sdkUndici)],
    ["sdk create lean", () => sdkCreate(sdkLean)],
    ...(baseClient === undefined ? [] : [["model-client base", () => baseClient.streamMessage(params)] as const]),
    ["model-client lean", () => client.streamMessage(params)],
  ]);
}

/** Microseconds of this process's CPU (user + system) a request, one figure a round per variant; odd rounds in reverse order. */
async function measure(runs: ReadonlyMap<string, () => Promise<unknown>>, rounds: number, perRound: number): Promise<Map<string, number[]>> {
  const results = new Map<string, number[]>([...runs.keys()].map((name) => [name, []]));
  for (const run of runs.values()) for (let i = 0; i < WARMUP; i++) await run();
  for (let r = 0; r < rounds; r++) {
    const order = [...runs.entries()];
    if (r % 2 === 1) order.reverse();
    for (const [name, run] of order) {
      const before = process.cpuUsage();
      for (let i = 0; i < perRound; i++) await run();
      const used = process.cpuUsage(before);
      results.get(name)?.push((used.user + used.system) / perRound);
    }
  }
  return results;
}

/** The median of `xs` as the benchmark printed it: the upper one of an even count. */
const median = (sorted: readonly number[]): number => sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
const us = (x: number): string => x.toFixed(0);

export const requestCpuBench: Bench = {
  name: "request-cpu",
  title: "CPU a streamed model request costs the client's process, by layer, undici's fetch against the lean fetch",
  async run() {
    const [rounds = 8] = numbersFlag("rounds") ?? [];
    const [perRound = 200] = numbersFlag("requests") ?? [];
    const baseDir = textFlag("base");
    const base = baseDir === undefined ? undefined : ((await import(pathToFileURL(join(baseDir, "dist/index.js")).href)) as ModelClientModule);
    const model = await startModelProcess();
    try {
      const results = await measure(variants(model.url, base), rounds, perRound);
      const rows = [...results.entries()].map(([name, xs]) => {
        const sorted = [...xs].sort((a, b) => a - b);
        return [name, us(median(sorted)), us(sorted[0] ?? Number.NaN), us(sorted.at(-1) ?? Number.NaN), xs.map(us).join(" ")];
      });
      return {
        name: "request-cpu",
        title: this.title,
        tables: [{ title: "us of CPU a request in this process (user + system)", columns: ["variant", "median us", "min", "max", "rounds, in order"], rows }],
        checks: [],
        notes: [
          `${rounds} rounds of ${perRound} requests per variant, after ${WARMUP} of each; odd rounds run the variants in reverse order`,
          "a request: a streamed message of 40 words from the offline model (its own process), read to its end; the SDK without its tracing, maxRetries 0",
          ...(baseDir === undefined ? [] : [`model-client base: ${baseDir}`]),
        ],
        data: { rounds, perRound, base: baseDir ?? null, us: Object.fromEntries(results) },
      };
    } finally {
      await model.stop();
    }
  },
};

runIfMain(requestCpuBench, import.meta.url);
