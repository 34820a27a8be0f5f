/**
 * The github_repository tests' fixture (gateway/repositor*.test.ts): a real git smart-HTTP server
 * that demands a token (org/app and org/lib seeded), the whole stack with a real sandbox broker
 * whose failed clones are tried again after RETRY_MS, every service's log lines and every HTTP
 * body the SDK received (to look for the token in), an agent that pushes, and the steps those
 * tests repeat: a repository resource, waiting for idles, a command in a session's sandbox.
 */
import { randomBytes } from "node:crypto";
import Anthropic from "@anthropic-ai/sdk";
import { defineScenario, type StepContext } from "@metaharness/offline-model";
import { eventually } from "./eventually.js";
import { startStack, type Stack } from "./gateway.js";
import { startGitServer, type GitServer } from "./git-server.js";
import { LogCapture } from "./log-capture.js";
import { run } from "./sandbox-broker.js";

type SessionEvent = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;

/** How long after a failed clone the broker tries the repository again in the same sandbox. */
export const RETRY_MS = 1_000;
const BASH = (command: string) => ({ name: "bash", input: { command } });
const PUSH = [
  "cd /workspace/app && git config user.email agent@example.com && git config user.name Agent",
  "echo 2 > VERSION && git commit -qam 'bump the version' && git push -q origin HEAD:main 2>&1 && git log --oneline -1",
].join(" && ");

export const idOf = (r: unknown): string => (r as { id: string }).id;

/** What each agent.tool_result of `events` holds, as JSON. */
export const listings = (events: SessionEvent[]): string[] => events.flatMap((e) => (e.type === "agent.tool_result" ? [JSON.stringify(e.content)] : []));

/** Throws if `text` holds `secret` (or, for text, its hex spelling: a bytea column's). */
export function assertAbsent(where: string, text: string | Buffer, secret: string): void {
  const hex = Buffer.from(secret).toString("hex");
  const found = typeof text === "string" ? text.includes(secret) || text.includes(hex) : text.includes(secret);
  if (found) throw new Error(`${secret.slice(0, 12)}… found in ${where}`);
}

export interface RepositoryStack {
  readonly git: GitServer;
  readonly stack: Stack;
  /** The SDK of tenant A, keeping every response body in `bodies`. */
  readonly sdk: Anthropic;
  readonly bodies: string[];
  readonly logs: LogCapture;
  /** The token the git server takes at first. */
  readonly token: string;
  /** An agent of the repo-push scenario (look, bump the version, commit, push). */
  readonly agentId: string;
  readonly environmentId: string;
  /** A github_repository resource of the git server's org/`name`. */
  readonly repository: (name?: string, extra?: object) => { type: "github_repository"; url: string };
  /** The session's events once it has gone idle. */
  readonly untilIdle: (id: string) => Promise<SessionEvent[]>;
  /** The session's events once it has gone idle `n` times. */
  readonly untilIdles: (id: string, n: number) => Promise<SessionEvent[]>;
  /** Runs `command` in the session's sandbox; whether it succeeded, and its output. */
  readonly sh: (sessionId: string, command: string) => Promise<{ ok: boolean; out: string }>;
  stop(): Promise<void>;
}

export async function startRepositoryStack(): Promise<RepositoryStack> {
  const token = `ghs_repotest_${randomBytes(12).toString("hex")}`;
  const git = await startGitServer({ username: "x-access-token", token });
  let stack: Stack | undefined;
  try {
    await git.seed("org/app.git", { "README.md": "the app\n", VERSION: "1\n" });
    await git.seed("org/lib.git", { "LIB.md": "a library\n" });
    const scenario = defineScenario("repo-push", [
      { text: "Looking at the repository.", toolUses: [BASH("cd /workspace/app && git log --oneline -1 && cat VERSION")] },
      { text: "Bumping the version.", toolUses: [BASH(PUSH)] },
      { text: "Pushed." },
    ]);
    const seen = (ctx: StepContext) => ({ text: `saw: ${ctx.lastToolResult?.content ?? "?"}` });
    const listing = defineScenario("repo-ls", [{ toolUses: [BASH("ls /workspace")] }, seen, { toolUses: [BASH("ls /workspace")] }, seen]);
    const retry = defineScenario("repo-retry", [
      { toolUses: [BASH("ls /workspace")] },
      { toolUses: [BASH(`sleep ${(2 * RETRY_MS) / 1000}`)] },
      { toolUses: [BASH("ls /workspace")] },
      seen,
    ]);
    const logs = new LogCapture();
    const started = await startStack({
      scenarios: [scenario, listing, retry],
      broker: true,
      brokerEnv: { MH_REPOSITORY_RETRY_MS: String(RETRY_MS) },
      logger: (service) => logs.logger(service),
    });
    stack = started;
    const bodies: string[] = [];
    const sdk = new Anthropic({
      apiKey: "mh-test-key-tenant-a-0123456789",
      baseURL: started.gateway.url,
      maxRetries: 0,
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        bodies.push(await res.clone().text());
        return res;
      },
    });
    const agentId = (await sdk.beta.agents.create({ name: "pusher", model: "claude-sonnet-5-5", system: "[scenario:repo-push]", tools: [{ type: "agent_toolset_20260401" }] })).id;
    const environmentId = (await sdk.beta.environments.create({ name: "repos" })).id;
    const untilIdles = (id: string, n: number): Promise<SessionEvent[]> => {
      let events: SessionEvent[] = [];
      return eventually(
        async () => {
          events = (await sdk.beta.sessions.events.list(id)).data;
          return events.filter((e) => e.type === "session.status_idle").length >= n ? events : undefined;
        },
        () => `session ${id} to go idle ${n} times: ${events.map((e) => e.type).join(", ")}`,
        60_000,
      );
    };
    const broker = started.brain.broker!;
    return {
      git,
      stack: started,
      sdk,
      bodies,
      logs,
      token,
      agentId,
      environmentId,
      repository: (name = "app", extra = {}) => ({ type: "github_repository" as const, url: `${git.url}/org/${name}.git`, ...extra }),
      untilIdle: (id) => untilIdles(id, 1),
      untilIdles,
      sh: async (sessionId, command) => {
        const { sandboxes } = await broker.client.listSandboxes({ sessionId, includeEnded: false });
        const res = await run(broker.client, sandboxes[0]!.sandboxId, "bash", { command }, { sessionId, timeoutMs: 60_000 });
        return { ok: !res.isError, out: res.output };
      },
      stop: async () => {
        await started.stop();
        await git.close();
      },
    };
  } catch (err) {
    await stack?.stop();
    await git.close();
    throw err;
  }
}
