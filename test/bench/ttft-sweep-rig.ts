/**
 * The rig of the TTFT sweep: the same services twice configured. One brain (session log on
 * Postgres, the offline model, the real sandbox broker on bubblewrap, the credential vault proxy)
 * with two harness instances: decoupled (the default) and coupled (MH_EAGER_SANDBOX: the session's
 * sandbox, its repository cloned through the proxy from a git server that refuses requests without
 * the token, provisioned before the first model call). Sessions name a generated repository of a
 * stated size (bench-repos.ts) and a vault holding its token, as a session made over the API does.
 *
 * Which instance drives a session is made certain as in harness-rig.ts: sweepers slowed to once
 * per 10 minutes, no wake of freed sessions, each session woken through its instance's own Wake.
 */
import { defineScenario } from "@metaharness/offline-model";
import { HarnessClient, HarnessService } from "@metaharness/proto";
import { createClient, promisify } from "@metaharness/service-kit/grpc";
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

export interface SweepRig {
  readonly brain: Brain;
  readonly decoupled: Instance;
  readonly coupled: Instance;
  readonly git: GitServer;
  /** A session whose repository is `repo` (cloned at `repo/` in the workspace) and whose vault holds its token. */
  newSession(repo: RepoSpec): Promise<string>;
  stop(): Promise<void>;
}

export async function startSweepRig(opts: { ttfts: readonly number[]; repos: readonly RepoSpec[] }): Promise<SweepRig> {
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
    const brain = await startBrain({
      scenarios: scenarios(opts.ttfts),
      log,
      broker: {
        MH_CREDENTIAL_PROXY_ADDR: vault.address,
        MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.broker,
        // Many sandboxes at once (64 concurrent sessions), each with its clone's relay.
        MH_REMOTE_MAX_CONNECTIONS: "256",
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
    return {
      brain,
      decoupled: { label: "decoupled", id: first.supervisor.instanceId, rpc: brain.rpc },
      coupled: { label: "coupled", id: second.supervisor.instanceId, rpc: promisify(raw, HarnessService) },
      git,
      async newSession(repo) {
        const metadata = {
          ...metadataWithVaults([vaultId]),
          repositories: [{ resourceId: "sesrsc_bench", url: `${git.url}/bench/${repo.name}.git`, mountPath: "repo", checkout: "" }],
        };
        const { session } = await log.client.createSession({ sessionId: "", metadata });
        return session!.sessionId;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
