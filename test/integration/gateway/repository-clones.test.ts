/**
 * github_repository resources that do not clone, through the official SDK on real services (a
 * real git server that demands a token, the bubblewrap broker): each failure is a
 * repository_*_error event and the sandbox and the session go on without it; a repository added
 * while the session runs, or one whose token is fixed or that the host now takes, is cloned into
 * the sandbox the session already has, at its next tool call (after the broker's retry wait).
 */
import type { ResourceAddParams } from "@anthropic-ai/sdk/resources/beta/sessions/resources";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../../support/eventually.js";
import { RETRY_MS, assertAbsent, idOf, listings, startRepositoryStack, type RepositoryStack } from "../../support/repositories.js";

let fixture: RepositoryStack;
let TOKEN: string;
let git: RepositoryStack["git"];
let stack: RepositoryStack["stack"];
let sdk: RepositoryStack["sdk"];
let agentId: RepositoryStack["agentId"];
let environmentId: RepositoryStack["environmentId"];
let repository: RepositoryStack["repository"];
let untilIdle: RepositoryStack["untilIdle"];
let untilIdles: RepositoryStack["untilIdles"];
let sh: RepositoryStack["sh"];
beforeAll(async () => {
  fixture = await startRepositoryStack();
  ({ token: TOKEN, git, stack, sdk, agentId, environmentId, repository, untilIdle, untilIdles, sh } = fixture);
});
afterAll(async () => {
  await fixture?.stop();
});

describe("a github_repository resource that does not clone", () => {
  it("reports each repository that does not clone as a repository_*_error; the sandbox and the session go on without it", async () => {
    git.accept(TOKEN); // an earlier test rotated it
    await git.seed("org/kept.git", { "KEPT.md": "kept\n" });
    const session = await sdk.beta.sessions.create({
      agent: agentId,
      environment_id: environmentId,
      resources: [
        repository("app", { authorization_token: TOKEN }),
        repository("missing", { authorization_token: TOKEN }),
        repository("kept", { authorization_token: "ghs_not_the_token" }),
        repository("lib", { authorization_token: TOKEN, mount_path: "/workspace/lib-branch", checkout: { type: "branch", name: "no-such-branch" } }),
      ],
      initial_events: [{ type: "user.message", content: [{ type: "text", text: "Look at it." }] }],
    });
    const events = await untilIdle(session.id);
    const errors = events.flatMap((e) => (e.type === "session.error" ? [e.error as unknown as Record<string, unknown>] : []));
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: "repository_not_found_error", repository_url: `${git.url}/org/missing.git`, retry_status: { type: "retrying" } }),
        expect.objectContaining({ type: "repository_authentication_error", repository_url: `${git.url}/org/kept.git`, retry_status: { type: "retrying" } }),
        expect.objectContaining({ type: "repository_checkout_error", repository_url: `${git.url}/org/lib.git`, retry_status: { type: "retrying" } }),
      ]),
    );
    expect(errors).toHaveLength(3);
    for (const e of errors) expect(String(e["message"])).toMatch(/(cloning|checking out) .* failed/);
    // The repository that cloned is there and the agent's first command ran in it.
    const [first] = events.filter((e) => e.type === "agent.tool_result");
    expect(first?.is_error).toBe(false);
    expect((await sh(session.id, "ls /workspace")).out.split(/\s+/).filter(Boolean).sort()).toEqual(["app"]);
    expect(events.at(-1)).toMatchObject({ type: "session.status_idle", stop_reason: { type: "end_turn" } });
    assertAbsent("the events", JSON.stringify(events), TOKEN);
  }, 120_000);

  it("clones a repository added while the session runs into the sandbox it already has, at its next tool call", async () => {
    git.accept(TOKEN);
    const lister = (await sdk.beta.agents.create({ name: "lister", model: "claude-sonnet-5-5", system: "[scenario:repo-ls]", tools: [{ type: "agent_toolset_20260401" }] })).id;
    const session = await sdk.beta.sessions.create({
      agent: lister,
      environment_id: environmentId,
      resources: [repository("app", { authorization_token: TOKEN })],
      initial_events: [{ type: "user.message", content: [{ type: "text", text: "List." }] }],
    });
    const idles = (n: number) => untilIdles(session.id, n);
    const [before] = listings(await idles(1));
    expect(before).toContain("app");
    expect(before).not.toContain("lib");

    await sdk.beta.sessions.resources.add(session.id, repository("lib", { authorization_token: TOKEN }) as unknown as ResourceAddParams);
    await sdk.beta.sessions.events.send(session.id, { events: [{ type: "user.message", content: [{ type: "text", text: "Again." }] }] });
    const events = await idles(2);
    const after = listings(events)[1];
    expect(after).toContain("app");
    expect(after).toContain("lib");
    // The same sandbox: it was provisioned once.
    expect((await stack.brain.broker!.client.listSandboxes({ sessionId: session.id, includeEnded: true })).sandboxes).toHaveLength(1);
  }, 120_000);

  it("clones a repository that failed, into the same sandbox, once its token is fixed", async () => {
    git.accept(TOKEN);
    const lister = (await sdk.beta.agents.create({ name: "lister", model: "claude-sonnet-5-5", system: "[scenario:repo-ls]", tools: [{ type: "agent_toolset_20260401" }] })).id;
    const session = await sdk.beta.sessions.create({
      agent: lister,
      environment_id: environmentId,
      resources: [repository("app", { authorization_token: TOKEN }), repository("lib", { authorization_token: "ghs_not_the_token" })],
      initial_events: [{ type: "user.message", content: [{ type: "text", text: "List." }] }],
    });
    const idles = (n: number) => untilIdles(session.id, n);
    const first = await idles(1);
    const failedAt = Date.now();
    expect(listings(first)[0]).not.toContain("lib");
    expect(first.filter((e) => e.type === "session.error").map((e) => (e.error as { type: string }).type)).toEqual(["repository_authentication_error"]);

    // The user fixes the token; the turn after the broker's retry wait finds the repository there.
    const { data: resources } = await sdk.beta.sessions.resources.list(session.id);
    const lib = resources.find((r) => r.type === "github_repository" && r.url.endsWith("/org/lib.git"));
    await sdk.beta.sessions.resources.update(idOf(lib), { session_id: session.id, authorization_token: TOKEN });
    // A fixed wait on purpose: the broker's retry wait is a time, and waiting it out is what is tested.
    await new Promise((r) => setTimeout(r, RETRY_MS - (Date.now() - failedAt)));
    await sdk.beta.sessions.events.send(session.id, { events: [{ type: "user.message", content: [{ type: "text", text: "Again." }] }] });
    const after = listings(await idles(2))[1];
    expect(after).toContain("app");
    expect(after).toContain("lib");
    expect((await stack.brain.broker!.client.listSandboxes({ sessionId: session.id, includeEnded: true })).sandboxes).toHaveLength(1);
  }, 120_000);

  it("clones a repository that failed, within the same turn, once the host takes its token", async () => {
    // One turn, three tool calls: the harness asks the broker again before each while a listed
    // repository is missing from the sandbox (a new harness asks at its first call anyway).
    const rotated = `ghs_retry_${randomBytes(8).toString("hex")}`;
    git.accept(TOKEN);
    const retrier = (await sdk.beta.agents.create({ name: "retrier", model: "claude-sonnet-5-5", system: "[scenario:repo-retry]", tools: [{ type: "agent_toolset_20260401" }] })).id;
    const session = await sdk.beta.sessions.create({
      agent: retrier,
      environment_id: environmentId,
      resources: [repository("app", { authorization_token: TOKEN }), repository("lib", { authorization_token: rotated })],
      initial_events: [{ type: "user.message", content: [{ type: "text", text: "List, wait, list." }] }],
    });
    const results = (n: number): Promise<string[]> =>
      eventually(
        async () => {
          const found = listings((await sdk.beta.sessions.events.list(session.id)).data);
          return found.length >= n ? found : undefined;
        },
        `session ${session.id} to have ${n} tool results`,
        60_000,
      );
    const [before] = await results(1);
    expect(before).not.toContain("lib");
    git.accept(rotated); // the host now takes lib's token (app is cloned already)
    await untilIdle(session.id);
    const after = (await results(3))[2];
    expect(after).toContain("app");
    expect(after).toContain("lib");
  }, 120_000);
});
