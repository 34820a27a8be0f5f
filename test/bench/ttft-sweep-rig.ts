/**
 * The rig of the TTFT sweep: the same services twice configured. One brain (session log on
 * Postgres, the offline model, the real sandbox broker on bubblewrap, the credential vault proxy)
 * with two harness instances: decoupled (the default) and coupled (MH_EAGER_SANDBOX: the session's
 * sandbox, its repository cloned through the proxy from a git server that refuses requests without
 * the token, provisioned before the first model call). Sessions name a generated repository of a
 * stated size (bench-repos.ts) and a vault holding its token, as a session made over the API does.
 *
 * Sessions may also name packages (their environment's package layer, built by the broker from the
 * real registries into a layer directory of the rig's own): a set built before the rounds
 * ("cached"), or a set no session asked for before, built by the first session that needs it
 * ("not cached"), one new set per round and mode.
 *
 * Which instance drives a session is made certain as in harness-rig.ts: sweepers slowed to once
 * per 10 minutes, no wake of freed sessions, each session woken through its instance's own Wake.
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineScenario } from "@metaharness/offline-model";
import { EnvironmentNetworking, EnvironmentType, HarnessClient, HarnessService, LayerState, type PackageLists } from "@metaharness/proto";
import { createClient, promisify } from "@metaharness/service-kit/grpc";
import { eventually } from "../support/eventually.js";
import { startGitServer, type GitServer } from "../support/git-server.js";
import { startBrain, type Brain } from "../support/harness.js";
import { startTestLog, type TestLog } from "../support/session-log.js";
import { metadataWithVaults, newVault, putGitToken, startTestVault, type TestVault } from "../support/vault.js";
import { serveRepos, type RepoSpec } from "./lib/bench-repos.js";
import { EVENT_TEXT } from "./lib/service.js";
import type { Instance } from "./harness-rig.js";

const TOKEN = "ghs_benchsweep_7f3e2d1c0b9a8f7e6d5c";
const LEAD = "Let me look at the repository before I answer.";
const unpaced = { ttftMs: 0, tokensPerSecond: 0 };

/** The kinds of session in the mix: one never touches a sandbox, one calls bash in its first turn. */
export type SessionKind = "text" | "bash";
export const KINDS: readonly SessionKind[] = ["text", "bash"];

export const scenarioName = (ttftMs: number, kind: SessionKind): string => `sweep-${ttftMs}-${kind}`;

/** For each model TTFT: a text answer, and a lead-in then `ls` of the repository (its answer unpaced). */
function scenarios(ttfts: readonly number[]) {
  return ttfts.flatMap((t) => [
    defineScenario(scenarioName(t, "text"), [{ text: EVENT_TEXT, ttftMs: t, tokensPerSecond: 0 }]),
    defineScenario(scenarioName(t, "bash"), [
      { text: LEAD, toolUses: [{ name: "bash", input: { command: "ls -la repo | head -3" } }], ttftMs: t, tokensPerSecond: 0 },
      { text: EVENT_TEXT, ...unpaced },
    ]),
  ]);
}

/** A session's package layer: none, built before (cached), or built by the first session that names it. */
export type LayerKind = "none" | "cached" | "uncached";

const NO_PACKAGES: PackageLists = { apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] };
/** The cached set, built when the rig starts (a venv with one pip package, an npm prefix with one package). */
export const CACHED_SET: PackageLists = { ...NO_PACKAGES, pip: ["six==1.17.0"], npm: ["left-pad@1.3.0"] };
/** The sets built by a first session: each names a version of six no other set does. */
const FRESH_SIX = ["1.16.0", "1.15.0", "1.14.0", "1.13.0", "1.12.0", "1.11.0", "1.10.0", "1.9.0", "1.8.0", "1.7.3", "1.6.1", "1.5.2"];
export const freshSet = (i: number): PackageLists => {
  const six = FRESH_SIX[i];
  if (six === undefined) throw new Error(`the sweep asks for more new package sets than the ${FRESH_SIX.length} it has`);
  return { ...NO_PACKAGES, pip: [`six==${six}`], npm: ["left-pad@1.3.0"] };
};
const BUILD_TIMEOUT_MS = 600_000;

export interface SweepRig {
  readonly brain: Brain;
  readonly decoupled: Instance;
  readonly coupled: Instance;
  readonly git: GitServer;
  /** A session whose repository is `repo` (cloned at `repo/` in the workspace), whose vault holds its token, and whose environment names `packages`. */
  newSession(repo: RepoSpec, packages?: PackageLists): Promise<string>;
  /** The packages of a session of `kind`: "uncached" gives a set not asked for before at every call. */
  packages(kind: LayerKind): PackageLists | undefined;
  stop(): Promise<void>;
}

export async function startSweepRig(opts: { ttfts: readonly number[]; repos: readonly RepoSpec[]; layers: boolean }): Promise<SweepRig> {
  const stops: Array<() => Promise<unknown>> = [];
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  try {
    const log: TestLog = await startTestLog({ MH_RELAY_ENABLED: "false" });
    stops.push(() => log.stop());
    const vault: TestVault = await startTestVault({ sessionLog: log.reach("proxy") });
    stops.push(() => vault.stop());
    const git = await startGitServer({ username: "x-access-token", token: TOKEN });
    stops.push(() => git.close());
    await serveRepos(git.root, opts.repos);
    const admin = vault.client("admin");
    const vaultId = await newVault(admin);
    await putGitToken(admin, vaultId, `${git.url}/bench`, TOKEN);
    const layerDir = await mkdtemp(join(tmpdir(), "mh-bench-sweep-layers-"));
    stops.push(async () => {
      // Each layer's /usr overlay is mounted once per layer, below its directory.
      spawnSync("sh", ["-c", `for m in ${layerDir}/mounts/*; do umount -l "$m" 2>/dev/null; done; true`]);
      await rm(layerDir, { recursive: true, force: true });
    });
    const brain = await startBrain({
      scenarios: scenarios(opts.ttfts),
      log,
      broker: {
        MH_CREDENTIAL_PROXY_ADDR: vault.address,
        MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.broker,
        // Many sandboxes at once (64 concurrent sessions), each with its clone's relay.
        MH_REMOTE_MAX_CONNECTIONS: "256",
        MH_LAYER_DIR: layerDir,
      },
      // No sweeper and no wake of freed sessions (so each session stays on the instance woken), and
      // leases long enough that no renewal comes too late on a loaded machine: a lost lease
      // would leave the turn to no one. Neither is on the path to the first token.
      env: { MH_SWEEP_MS: "600000", MH_WAKE_FREED: "false", MH_LEASE_TTL_MS: "60000" },
    });
    stops.push(() => brain.stop());
    const first = brain.harnesses[0];
    if (first === undefined) throw new Error("the brain started no harness");
    const second = await brain.addHarness({ MH_EAGER_SANDBOX: "true" });
    const raw = createClient(HarnessClient, `127.0.0.1:${second.port}`, { bearerToken: brain.harnessTokens.tokens.admin });
    stops.push(() => Promise.resolve(raw.close()));
    if (opts.layers) await buildLayer(brain, CACHED_SET);
    let fresh = 0;
    return {
      brain,
      decoupled: { label: "decoupled", id: first.supervisor.instanceId, rpc: brain.rpc },
      coupled: { label: "coupled", id: second.supervisor.instanceId, rpc: promisify(raw, HarnessService) },
      git,
      async newSession(repo, packages) {
        const metadata = {
          ...metadataWithVaults([vaultId]),
          repositories: [{ resourceId: "sesrsc_bench", url: `${git.url}/bench/${repo.name}.git`, mountPath: "repo", checkout: "" }],
          ...(packages === undefined
            ? {}
            : {
                environment: {
                  ...{ type: EnvironmentType.ENVIRONMENT_TYPE_CLOUD, networking: EnvironmentNetworking.ENVIRONMENT_NETWORKING_LIMITED, allowedHosts: [] },
                  ...{ allowMcpServers: false, allowPackageManagers: false, packages, handKind: "" },
                },
              }),
        };
        const { session } = await log.client.createSession({ sessionId: "", metadata });
        return session!.sessionId;
      },
      packages: (kind) => (kind === "none" ? undefined : kind === "cached" ? CACHED_SET : freshSet(fresh++)),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Builds `packages`' layer in the rig's broker and waits until it is ready. */
async function buildLayer(brain: Brain, packages: PackageLists): Promise<void> {
  const client = brain.broker!.client;
  await client.buildLayer({ packages, retryFailed: true });
  await eventually(
    async () => {
      const { layer } = await client.describeLayer({ packages });
      if (layer?.state === LayerState.LAYER_STATE_FAILED) throw new Error(`the layer's build failed: ${layer.output}`);
      return layer?.state === LayerState.LAYER_STATE_READY ? true : undefined;
    },
    "the cached package layer",
    BUILD_TIMEOUT_MS,
  );
}
