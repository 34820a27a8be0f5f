/**
 * Environment package layers (issue 28), on real bubblewrap and the real registries:
 * - the build of a stated package set (one apt, one pip and one npm package) from nothing: the
 *   broker's build time, the wall time until DescribeLayer says READY, and the layer's size on disk;
 * - Provision of a sandbox that mounts that built layer against a bare cold sandbox, interleaved in
 *   the same run (target: p50 within 10 ms of bare);
 * - the first-token time of a session (send -> first agent.message on the SDK's stream, a turn
 *   that says something, then calls bash) in an environment whose layer is still building, against
 *   a bare environment in the same window, and again once the layer is ready (target: unchanged;
 *   the sandbox, and so the layer, is only waited for at the tool call).
 *
 * Standalone: `npx tsx bench/layers.ts` from test/; in run.ts as `layers`.
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { defineScenario } from "@metaharness/offline-model";
import { LayerState, type PackageLists } from "@metaharness/proto";
import { startStack, type Stack } from "../support/gateway.js";
import { eventually } from "../support/eventually.js";
import { startTestBroker, type BrokerClient } from "../support/sandbox-broker.js";
import { atMost, LATENCY_COLUMNS, latencyCells, ms, runIfMain, type Bench, type BenchReport } from "./lib/report.js";
import { nowMs, summarize, type Summary } from "./lib/stats.js";

const NONE: PackageLists = { apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] };
/** The stated set whose build is measured. */
const SET: PackageLists = { ...NONE, apt: ["cowsay"], pip: ["six==1.16.0"], npm: ["left-pad@1.3.0"] };
/** Another set, for the first-token runs: built while sessions start in its environment. */
const TTFT_SET = { apt: ["sl"], pip: ["six==1.15.0"], npm: ["left-pad@1.2.0"] };
const PROVISIONS = 60;
const WARMUP = 10;
const TTFT_SAMPLES = 8;
const BUILD_TIMEOUT_MS = 600_000;
const EMPTY = { cpuMillis: 0, memoryBytes: 0, diskBytes: 0, maxProcesses: 0, lifetimeSeconds: 0, idleTimeoutSeconds: 0, network: undefined, files: [], repositories: [] };

async function provisionMs(client: BrokerClient, packages: PackageLists | undefined): Promise<number> {
  const t0 = nowMs();
  const res = await client.provision({ fork: undefined, key: "", sessionId: "sesn_bench_layers", handKind: "", resources: { ...EMPTY, packages } });
  const elapsed = nowMs() - t0;
  await client.release({ sandboxId: res.sandbox!.sandboxId, sessionId: "" });
  return elapsed;
}

function unmountAll(dir: string): void {
  spawnSync("sh", ["-c", `for m in ${dir}/mounts/*; do umount -l "$m" 2>/dev/null; done; true`]);
}

interface BrokerFigures {
  readonly buildMs: number;
  readonly wallMs: number;
  readonly sizeBytes: number;
  readonly duBytes: number;
  readonly bare: Summary;
  readonly layered: Summary;
}

async function brokerPart(): Promise<BrokerFigures> {
  const dir = await mkdtemp(join(tmpdir(), "mh-bench-layers-"));
  const broker = await startTestBroker({ MH_LAYER_DIR: dir });
  try {
    const t0 = nowMs();
    await broker.client.buildLayer({ packages: SET, retryFailed: true });
    const layer = await eventually(
      async () => {
        const { layer: l } = await broker.client.describeLayer({ packages: SET });
        if (l?.state === LayerState.LAYER_STATE_FAILED) throw new Error(`the build failed: ${l.output}`);
        return l?.state === LayerState.LAYER_STATE_READY ? l : undefined;
      },
      "the layer",
      BUILD_TIMEOUT_MS,
    );
    const wallMs = nowMs() - t0;
    const du = spawnSync("du", ["-sb", join(dir, layer.layerId)], { encoding: "utf8" });
    const bare: number[] = [];
    const layered: number[] = [];
    for (let i = 0; i < WARMUP + PROVISIONS; i++) {
      // Alternating which goes first, so drift in the machine's load reaches both alike.
      let bareMs = 0;
      let layerMs = 0;
      for (const which of i % 2 === 0 ? ["bare", "layer"] : ["layer", "bare"]) {
        if (which === "bare") bareMs = await provisionMs(broker.client, undefined);
        else layerMs = await provisionMs(broker.client, SET);
      }
      if (i >= WARMUP) {
        bare.push(bareMs);
        layered.push(layerMs);
      }
    }
    return { buildMs: layer.buildMs, wallMs, sizeBytes: Number(layer.sizeBytes), duBytes: Number(du.stdout.split("\t")[0] ?? 0), bare: summarize(bare), layered: summarize(layered) };
  } finally {
    await broker.stop();
    unmountAll(dir);
    await rm(dir, { recursive: true, force: true }).catch((err: unknown) => console.error(`could not remove ${dir}: ${String(err)}`));
  }
}

const scenarios = [
  defineScenario("layer-ttft", [
    { text: "Let me look.", toolUses: [{ name: "bash", input: { command: "true" } }] },
    { text: "Done." },
  ]),
];

/** send -> the first agent.message on the stream, in a new session of `environmentId`. */
async function firstToken(sdk: Anthropic, agentId: string, environmentId: string): Promise<number> {
  const session = await sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId });
  const stream = await sdk.beta.sessions.events.stream(session.id);
  const t0 = nowMs();
  await sdk.beta.sessions.events.send(session.id, { events: [{ type: "user.message", content: [{ type: "text", text: "go" }] }] });
  for await (const event of stream) {
    if (event.type === "agent.message") {
      const elapsed = nowMs() - t0;
      stream.controller.abort();
      return elapsed;
    }
  }
  throw new Error("the stream ended without an agent.message");
}

interface TtftFigures {
  readonly building: Summary;
  readonly bareWhileBuilding: Summary;
  readonly ready: Summary;
  readonly bareWhenReady: Summary;
  readonly discarded: number;
}

async function stackPart(): Promise<TtftFigures> {
  const dir = await mkdtemp(join(tmpdir(), "mh-bench-layers-gw-"));
  let stack: Stack | undefined;
  try {
    stack = await startStack({ scenarios, broker: true, brokerEnv: { MH_LAYER_DIR: dir } });
    const sdk = stack.client().sdk;
    const agent = await sdk.beta.agents.create({ name: "b", model: "claude-sonnet-5-5", system: "[scenario:layer-ttft]", tools: [{ type: "agent_toolset_20260401" }] });
    const bareEnv = await sdk.beta.environments.create({ name: "bare" });
    // Warm the path (first session of a process pays for connections and JIT).
    await firstToken(sdk, agent.id, bareEnv.id);
    const env = await sdk.beta.environments.create({
      name: "building",
      config: { type: "cloud", networking: { type: "limited", allow_package_managers: true }, packages: TTFT_SET },
    });
    const status = async (): Promise<string | undefined> => (await sdk.beta.environments.retrieve(env.id)).metadata["metaharness.packages.status"];
    const building: number[] = [];
    const bareWhileBuilding: number[] = [];
    let discarded = 0;
    while (building.length < TTFT_SAMPLES && (await status()) === "building") {
      const sample = await firstToken(sdk, agent.id, env.id);
      const bare = await firstToken(sdk, agent.id, bareEnv.id);
      // Counted only if the layer was still building when the first token had arrived.
      if ((await status()) === "building") {
        building.push(sample);
        bareWhileBuilding.push(bare);
      } else discarded++;
    }
    await eventually(async () => ((await status()) === "ready" ? true : undefined), "the layer to be ready", BUILD_TIMEOUT_MS);
    const ready: number[] = [];
    const bareWhenReady: number[] = [];
    for (let i = 0; i < TTFT_SAMPLES; i++) {
      ready.push(await firstToken(sdk, agent.id, env.id));
      bareWhenReady.push(await firstToken(sdk, agent.id, bareEnv.id));
    }
    return { building: summarize(building), bareWhileBuilding: summarize(bareWhileBuilding), ready: summarize(ready), bareWhenReady: summarize(bareWhenReady), discarded };
  } finally {
    await stack?.stop();
    unmountAll(dir);
    await rm(dir, { recursive: true, force: true }).catch((err: unknown) => console.error(`could not remove ${dir}: ${String(err)}`));
  }
}

async function runBench(): Promise<BenchReport> {
  const b = await brokerPart();
  const t = await stackPart();
  const mib = (x: number): string => (x / (1024 * 1024)).toFixed(1);
  return {
    name: "layers",
    title: "environment package layers: build, provision with a layer, first token while building",
    tables: [
      {
        title: `layer build of ${JSON.stringify({ apt: SET.apt, pip: SET.pip, npm: SET.npm })} from nothing`,
        columns: ["broker build ms", "BuildLayer -> READY ms", "size MiB (layer.json)", "du MiB"],
        rows: [[ms(b.buildMs), ms(b.wallMs), mib(b.sizeBytes), mib(b.duBytes)]],
      },
      {
        title: "Provision over gRPC, cold, interleaved",
        columns: ["what", ...LATENCY_COLUMNS],
        rows: [
          ["bare sandbox", ...latencyCells(b.bare)],
          ["with the built layer (ro-bind + overlaid /usr + env)", ...latencyCells(b.layered)],
        ],
      },
      {
        title: "first token through the SDK (send -> first agent.message), a turn that then calls bash",
        columns: ["what", ...LATENCY_COLUMNS],
        rows: [
          ["environment whose layer is building", ...latencyCells(t.building)],
          ["  bare environment, same window", ...latencyCells(t.bareWhileBuilding)],
          ["environment whose layer is ready", ...latencyCells(t.ready)],
          ["  bare environment, same window", ...latencyCells(t.bareWhenReady)],
        ],
      },
    ],
    checks: [
      atMost("Provision with a layer, p50 over bare p50", b.layered.p50 - b.bare.p50, 10, "ms"),
      atMost("Provision with a layer, p95 over bare p95", b.layered.p95 - b.bare.p95, 10, "ms"),
      atMost("first token while building, p50 over bare p50 (same window)", t.building.p50 - t.bareWhileBuilding.p50, 50, "ms"),
      atMost("first token when ready, p50 over bare p50 (same window)", t.ready.p50 - t.bareWhenReady.p50, 50, "ms"),
    ],
    notes: [
      "the build runs on this machine's 2 cores beside the sessions: 'same window' bare samples share that load",
      `first-token samples taken after the layer was ready were discarded from the building row: ${t.discarded}`,
      "size MiB is the broker's own count (files, not following links); du counts blocks",
    ],
    data: { broker: b, ttft: t },
  };
}

export const layersBench: Bench = { name: "layers", title: "environment package layers", run: runBench };

runIfMain(layersBench, import.meta.url);
