// µs of CPU a model request costs in this process (the offline model runs in another), by layer,
// in alternated rounds: fetch and reading the body, the SDK's create + its event iterator, and
// the model client (our accumulation), each over undici's fetch and over the lean fetch.
// Usage: node bench/request-cpu.mjs [rounds=8] [requests=200]   (after `npx tsc -b`); to compare with
// a base commit, copy its built dist to bench/dist-base (not committed): "model-client base" is it.
import { fork } from "node:child_process";
import Anthropic from "@anthropic-ai/sdk";
import { createModelClient } from "../dist/index.js";
import { createNodeFetch } from "../dist/node-fetch.js";

const rounds = Number(process.argv[2] ?? 8);
const perRound = Number(process.argv[3] ?? 200);
const base = await import("./dist-base/index.js").catch(() => undefined);

const server = fork(new URL("./model-server.mjs", import.meta.url));
const url = await new Promise((resolve) => server.once("message", resolve));
const lean = createNodeFetch().fetch;
const body = { model: "claude-offline-test", max_tokens: 1024, messages: [{ role: "user", content: "[scenario:bench] hello" }] };
const json = JSON.stringify({ ...body, stream: true });
const headers = { "content-type": "application/json", "x-api-key": "offline", "anthropic-version": "2023-06-01" };

async function rawFetch(f) {
  const res = await f(`${url}/v1/messages`, { method: "POST", headers, body: json });
  let n = 0;
  for await (const chunk of res.body) n += chunk.length;
  if (n === 0) throw new Error("empty body");
}
const sdkOpts = { baseURL: url, apiKey: "offline", maxRetries: 0, openTelemetry: { traces: false } };
const sdkUndici = new Anthropic(sdkOpts);
const sdkLean = new Anthropic({ ...sdkOpts, fetch: lean });
async function sdkCreate(client) {
  const stream = await client.messages.create({ ...body, stream: true });
  for await (const event of stream) void event;
}
const mcOpts = { baseURL: url, apiKey: "offline", model: "claude-offline-test", maxTokens: 1024 };
const mcLean = createModelClient(mcOpts);
const mcBase = base?.createModelClient(mcOpts);
const params = { messages: body.messages };

const variants = {
  "fetch undici": () => rawFetch(fetch),
  "fetch lean": () => rawFetch(lean),
  "sdk create undici": () => sdkCreate(sdkUndici),
  "sdk create lean": () => sdkCreate(sdkLean),
  ...(mcBase ? { "model-client base": () => mcBase.streamMessage(params) } : {}),
  "model-client lean": () => mcLean.streamMessage(params),
};
const results = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (const run of Object.values(variants)) for (let i = 0; i < 50; i++) await run(); // warm up
for (let r = 0; r < rounds; r++) {
  const order = Object.entries(variants);
  if (r % 2 === 1) order.reverse();
  for (const [name, run] of order) {
    const before = process.cpuUsage();
    for (let i = 0; i < perRound; i++) await run();
    const used = process.cpuUsage(before);
    results[name].push((used.user + used.system) / perRound);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [name, xs] of Object.entries(results)) {
  const s = [...xs].sort((a, b) => a - b);
  console.log(`${name.padEnd(20)} median ${median(xs).toFixed(0)} µs  (min ${s[0].toFixed(0)}, max ${s.at(-1).toFixed(0)})  rounds ${xs.map((x) => x.toFixed(0)).join(" ")}`);
}
server.disconnect();
