/**
 * Sessions with github_repository resources, end to end through the official SDK, on real
 * services: the session's repository (a real git smart-HTTP server that demands a token) is cloned
 * at provisioning through the credential vault proxy; the agent (the offline model) runs bash in
 * the bubblewrap sandbox: git log, an edit, a commit, a push, which lands on the server. The token
 * reached the server, and nowhere else: not in an HTTP response, an event, a database row (the
 * vault's is encrypted), a file of the sandbox or a log line. Then the resources API: list,
 * retrieve, add, update (a rotated token works at the next git command), delete, and bad inputs
 * answered with 4xx naming the field.
 */
import { randomBytes } from "node:crypto";
import Anthropic from "@anthropic-ai/sdk";
import type { ResourceAddParams } from "@anthropic-ai/sdk/resources/beta/sessions/resources";
import { newEvent } from "@metaharness/events";
import { defineScenario, type StepContext } from "@metaharness/offline-model";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sandboxFiles } from "../../security/sandbox-files.js";
import { KEY_B, raw, startStack, type Stack } from "../../support/gateway.js";
import { eventually } from "../../support/eventually.js";
import { startGitServer, type GitServer } from "../../support/git-server.js";
import { LogCapture } from "../../support/log-capture.js";
import { run } from "../../support/sandbox-broker.js";

const TOKEN = `ghs_repotest_${randomBytes(12).toString("hex")}`;
const ROTATED = `ghs_rotated_${randomBytes(12).toString("hex")}`;
/** How long after a failed clone the broker tries the repository again in the same sandbox. */
const RETRY_MS = 1_000;
const BASH = (command: string) => ({ name: "bash", input: { command } });
const PUSH = [
  "cd /workspace/app && git config user.email agent@example.com && git config user.name Agent",
  "echo 2 > VERSION && git commit -qam 'bump the version' && git push -q origin HEAD:main 2>&1 && git log --oneline -1",
].join(" && ");

let git: GitServer;
let stack: Stack;
const logs = new LogCapture();
/** Every HTTP response body the SDK received. */
const bodies: string[] = [];
let sdk: Anthropic;
let agentId: string;
let environmentId: string;

beforeAll(async () => {
  git = await startGitServer({ username: "x-access-token", token: TOKEN });
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
  stack = await startStack({
    scenarios: [scenario, listing, retry],
    broker: true,
    brokerEnv: { MH_REPOSITORY_RETRY_MS: String(RETRY_MS) },
    logger: (service) => logs.logger(service),
  });
  sdk = new Anthropic({
    apiKey: "mh-test-key-tenant-a-0123456789",
    baseURL: stack.gateway.url,
    maxRetries: 0,
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      bodies.push(await res.clone().text());
      return res;
    },
  });
  agentId = (await sdk.beta.agents.create({ name: "pusher", model: "claude-sonnet-5-5", system: "[scenario:repo-push]", tools: [{ type: "agent_toolset_20260401" }] })).id;
  environmentId = (await sdk.beta.environments.create({ name: "repos" })).id;
});
afterAll(async () => {
  await stack?.stop();
  await git?.close();
});

const idOf = (r: unknown): string => (r as { id: string }).id;
const repository = (name = "app", extra: object = {}) => ({ type: "github_repository" as const, url: `${git.url}/org/${name}.git`, ...extra });

/** The session's events once it has gone idle `n` times. */
async function untilIdles(id: string, n: number): Promise<Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent[]> {
  return eventually(
    async () => {
      const events = (await sdk.beta.sessions.events.list(id)).data;
      return events.filter((e) => e.type === "session.status_idle").length >= n ? events : undefined;
    },
    `session ${id} to go idle ${n} times`,
    60_000,
  );
}

/** What each agent.tool_result of `events` holds, as JSON. */
const listings = (events: Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent[]): string[] =>
  events.flatMap((e) => (e.type === "agent.tool_result" ? [JSON.stringify(e.content)] : []));

async function untilIdle(id: string): Promise<Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent[]> {
  let events: Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent[] = [];
  return eventually(
    async () => {
      events = (await sdk.beta.sessions.events.list(id)).data;
      return events.some((e) => e.type === "session.status_idle") ? events : undefined;
    },
    () => `session ${id} to go idle: ${events.map((e) => e.type).join(", ")}`,
    60_000,
  );
}

/** Every row of every table of a database, as text (bytea as hex, so both spellings are searched). */
async function databaseText(url: string): Promise<string> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const tables = await c.query<{ t: string }>("SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public'");
    const out: string[] = [];
    for (const { t } of tables.rows) out.push(...(await c.query<{ j: string }>(`SELECT row_to_json(x)::text AS j FROM "${t}" x`)).rows.map((r) => r.j));
    return out.join("\n");
  } finally {
    await c.end();
  }
}

function expectAbsent(where: string, text: string | Buffer, secret: string): void {
  const hex = Buffer.from(secret).toString("hex");
  const found = typeof text === "string" ? text.includes(secret) || text.includes(hex) : text.includes(secret);
  expect(found, `${secret.slice(0, 12)}… found in ${where}`).toBe(false);
}

async function sandboxOf(sessionId: string): Promise<string> {
  const { sandboxes } = await stack.brain.broker!.client.listSandboxes({ sessionId, includeEnded: false });
  return sandboxes[0]!.sandboxId;
}

const sh = async (sessionId: string, command: string) => {
  const res = await run(stack.brain.broker!.client, await sandboxOf(sessionId), "bash", { command }, { sessionId, timeoutMs: 60_000 });
  return { ok: !res.isError, out: res.output };
};

let sessionId: string;

describe("a session with a github_repository resource", () => {
  it("clones it through the proxy; the agent commits and pushes, and the push lands", async () => {
    const served = git.served;
    const refused = git.refused;
    const session = await sdk.beta.sessions.create({
      agent: agentId,
      environment_id: environmentId,
      resources: [repository("app", { authorization_token: TOKEN, mount_path: "/workspace/app" })],
      initial_events: [{ type: "user.message", content: [{ type: "text", text: "Bump the version and push." }] }],
    });
    sessionId = session.id;
    expect(session.resources).toEqual([expect.objectContaining({ type: "github_repository", url: `${git.url}/org/app.git`, mount_path: "/workspace/app" })]);
    expect(Object.keys(session.resources[0]!).sort()).toEqual(["created_at", "id", "mount_path", "type", "updated_at", "url"]);

    const events = await untilIdle(session.id);
    const results = events.filter((e) => e.type === "agent.tool_result");
    const text = (e: (typeof results)[number]) => JSON.stringify(e.content);
    expect(results).toHaveLength(2);
    expect(text(results[0]!)).toContain("first commit");
    expect(results[1]!.is_error ?? false, text(results[1]!)).toBe(false);
    expect(text(results[1]!)).toContain("bump the version");

    // The push arrived, and it was the token that let it in.
    expect(git.git("org/app.git", "log", "-1", "--format=%s %an", "main").trim()).toBe("bump the version Agent");
    expect(git.git("org/app.git", "show", "main:VERSION")).toBe("2\n");
    expect(git.served).toBeGreaterThan(served);
    expect(git.refused).toBe(refused);

    // The token went nowhere else.
    const { sandboxes } = await stack.brain.broker!.client.listSandboxes({ sessionId, includeEnded: false });
    expect(sandboxes).toHaveLength(1);
    const files = await sandboxFiles(stack.brain.broker!.handle.pidOf(sandboxes[0]!.sandboxId)!);
    expect(files.some((f) => f.path === "/workspace/app/VERSION")).toBe(true);
    for (const f of files) expectAbsent(`sandbox file ${f.path}`, f.content, TOKEN);
    await sdk.beta.sessions.resources.list(sessionId);
    await sdk.beta.sessions.retrieve(sessionId);
    expectAbsent("HTTP responses", bodies.join("\n"), TOKEN);
    expectAbsent("events", JSON.stringify(events), TOKEN);
    expectAbsent("the gateway's database", await databaseText(stack.db.url), TOKEN);
    expectAbsent("the session log's database", await databaseText(stack.brain.log.db.url), TOKEN);
    expectAbsent("the broker's database", await databaseText(stack.brain.broker!.db.url), TOKEN);
    expectAbsent("the vault's database (encrypted)", await databaseText(stack.vault!.db.url), TOKEN);
    const services = new Set(logs.lines.map((l) => (JSON.parse(l) as { service: string }).service));
    expect([...services].sort()).toEqual(["credential-vault-proxy", "gateway", "harness", "sandbox-broker", "session-log"]);
    expectAbsent("the logs", logs.lines.join(""), TOKEN);
    // The token's vault is the session's own: no vault of the tenant's, listed or found.
    const tenantVaults = await sdk.beta.vaults.list();
    expect(tenantVaults.data).toEqual([]);
  }, 120_000);

  it("lists, retrieves, adds, rotates and deletes resources", async () => {
    const first = (await sdk.beta.sessions.resources.list(sessionId)).data[0] as Anthropic.Beta.Sessions.BetaManagedAgentsGitHubRepositoryResource;
    expect(await sdk.beta.sessions.resources.retrieve(first.id, { session_id: sessionId })).toEqual(first);

    // Add (beyond the SDK's typing, which knows file resources only): the log's metadata follows.
    const params = repository("lib", { authorization_token: TOKEN }) as unknown as ResourceAddParams;
    const added = (await sdk.beta.sessions.resources.add(sessionId, params)) as unknown as Anthropic.Beta.Sessions.BetaManagedAgentsGitHubRepositoryResource;
    expect(added).toMatchObject({ type: "github_repository", mount_path: "/workspace/lib", url: `${git.url}/org/lib.git` });
    const page1 = await sdk.beta.sessions.resources.list(sessionId, { limit: 1 });
    expect(page1.data.map(idOf)).toEqual([first.id]);
    expect((await page1.getNextPage()).data.map(idOf)).toEqual([added.id]);
    const logged = async () => (await stack.brain.log.client.getSession({ sessionId })).session!.metadata!.repositories;
    expect(await logged()).toEqual([
      { resourceId: first.id, url: `${git.url}/org/app.git`, mountPath: "app", checkout: "" },
      { resourceId: added.id, url: `${git.url}/org/lib.git`, mountPath: "lib", checkout: "" },
    ]);

    // Rotation: the server now wants another token; the running sandbox's next fetch uses it.
    git.accept(ROTATED);
    expect((await sh(sessionId, "cd /workspace/app && git fetch -q origin 2>&1")).ok).toBe(false);
    const rotated = (await sdk.beta.sessions.resources.update(first.id, { session_id: sessionId, authorization_token: ROTATED })) as typeof first;
    expect(Date.parse(rotated.updated_at)).toBeGreaterThanOrEqual(Date.parse(first.updated_at));
    expect(await sh(sessionId, "cd /workspace/app && git fetch -q origin 2>&1 && echo fetched")).toEqual({ ok: true, out: "fetched" });
    expectAbsent("HTTP responses", bodies.join("\n"), ROTATED);

    // Delete: gone from the API and the log, and its token from the proxy.
    expect(await sdk.beta.sessions.resources.delete(first.id, { session_id: sessionId })).toEqual({ id: first.id, type: "session_resource_deleted" });
    expect((await sdk.beta.sessions.resources.list(sessionId)).data.map(idOf)).toEqual([added.id]);
    expect((await logged()).map((r) => r.resourceId)).toEqual([added.id]);
    expect((await sh(sessionId, "cd /workspace/app && git fetch -q origin 2>&1")).ok).toBe(false);
    expect((await sdk.beta.sessions.retrieve(sessionId)).resources.map(idOf)).toEqual([added.id]);

    // Deleting the session deletes its vault with every token in it.
    await sdk.beta.sessions.delete(sessionId);
    const c = new pg.Client({ connectionString: stack.vault!.db.url });
    await c.connect();
    const left = await c.query("SELECT 1 FROM vaults WHERE session_id = $1", [sessionId]).finally(() => c.end());
    expect(left.rowCount).toBe(0);
    expectAbsent("the logs", logs.lines.join(""), ROTATED);
  }, 120_000);

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
    expectAbsent("the events", JSON.stringify(events), TOKEN);
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

  it("composes concurrent changes: one mount path is taken once, different ones are all kept", async () => {
    const session = await sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId });
    const add = (name: string, mount: string) =>
      sdk.beta.sessions.resources.add(session.id, repository(name, { mount_path: mount, authorization_token: TOKEN }) as unknown as ResourceAddParams).then(
        () => "added",
        (e: InstanceType<typeof Anthropic.APIError>) => `${e.status} ${e.apiMessage}`,
      );
    const same = await Promise.all(["a", "b", "c", "d"].map((n) => add(n, "/workspace/same")));
    expect(same.filter((r) => r === "added")).toHaveLength(1);
    for (const r of same.filter((x) => x !== "added")) expect(r).toMatch(/^400 mount_path: /);
    expect(await Promise.all(["e", "f", "g", "h"].map((n) => add(n, `/workspace/${n}`)))).toEqual(["added", "added", "added", "added"]);
    const listed = (await sdk.beta.sessions.resources.list(session.id)).data as Array<{ id: string; mount_path: string }>;
    expect(listed.map((r) => r.mount_path).sort()).toEqual(["/workspace/e", "/workspace/f", "/workspace/g", "/workspace/h", "/workspace/same"]);
    const logged = (await stack.brain.log.client.getSession({ sessionId: session.id })).session!.metadata!.repositories;
    expect(logged.map((r) => r.resourceId).sort()).toEqual(listed.map((r) => r.id).sort());
    // Each kept resource has its token in the session's one vault; the refused ones left none behind.
    const c = new pg.Client({ connectionString: stack.vault!.db.url });
    await c.connect();
    const { rows } = await c
      .query<{ n: string }>("SELECT count(*) AS n FROM credentials JOIN vaults USING (vault_id) WHERE vaults.session_id = $1", [session.id])
      .finally(() => c.end());
    expect(Number(rows[0]!.n)).toBe(5);
  });

  it("leaves no vault behind when a terminated session refuses a resource", async () => {
    const session = await sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId });
    await stack.brain.log.client.emitEvent({ sessionId: session.id, event: newEvent("session.status_terminated", {}) });
    const refused = await sdk.beta.sessions.resources.add(session.id, repository("lib", { authorization_token: TOKEN }) as unknown as ResourceAddParams).then(
      () => "added",
      (e: InstanceType<typeof Anthropic.APIError>) => `${e.status} ${e.apiMessage}`,
    );
    expect(refused).toMatch(/^4\d\d .*terminated/);
    const c = new pg.Client({ connectionString: stack.vault!.db.url });
    await c.connect();
    const left = await c.query("SELECT 1 FROM vaults WHERE session_id = $1", [session.id]).finally(() => c.end());
    expect(left.rowCount).toBe(0);
  });

  it("refuses bad inputs with 4xx naming the field", async () => {
    const create = (resources: unknown[]) =>
      sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId, resources: resources as Anthropic.Beta.SessionCreateParams["resources"] }).then(
        () => "created",
        (e: InstanceType<typeof Anthropic.APIError>) => `${e.status} ${e.apiMessage}`,
      );
    expect(await create([{ type: "github_repository", url: "file:///etc/passwd" }])).toMatch(/^400 resources\[0\]\.url: /);
    expect(await create([{ type: "github_repository", url: "ssh://git.example/org/app.git" }])).toMatch(/^400 resources\[0\]\.url: /);
    expect(await create([{ type: "github_repository", url: `http://x-access-token:${TOKEN}@127.0.0.1/org/app.git` }])).toMatch(/^400 resources\[0\]\.url: must not carry credentials/);
    expect(await create([{ type: "github_repository", url: "https://git.example/a.git", authorization_token: "" }])).toMatch(/^400 resources\[0\]\.authorization_token: /);
    expect(await create([{ type: "github_repository", url: "https://git.example/a.git", mount_path: "/etc/a" }])).toMatch(/^400 resources\[0\]\.mount_path: /);
    expect(await create([repository("app"), repository("app", { url: `${git.url}/other/app.git` })])).toMatch(/^400 resources\[1\]\.mount_path: /);
    expect(await create([{ type: "github_repository", url: "https://git.example/a.git", checkout: { type: "branch", name: "--upload-pack=x" } }])).toMatch(
      /^400 resources\[0\]\.checkout\.name: /,
    );

    const session = await sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId, resources: [repository("app")] });
    const [resource] = session.resources as Array<{ id: string }>;
    const status = (p: Promise<unknown>) => p.then(() => 200, (e: InstanceType<typeof Anthropic.APIError>) => `${e.status} ${e.apiMessage}`);
    expect(await status(sdk.beta.sessions.resources.add(session.id, repository("lib", { mount_path: "/workspace/app" }) as unknown as ResourceAddParams))).toMatch(
      /^400 mount_path: /,
    );
    expect(await status(sdk.beta.sessions.resources.add(session.id, { type: "file", file_id: "file_1" }))).toMatch(/^400 type: /);
    const noToken = await raw(stack, "POST", `/v1/sessions/${session.id}/resources/${resource!.id}`, { body: "{}" });
    expect(noToken).toMatchObject({ status: 400, json: { error: { message: "authorization_token: Field required" } } });
    expect(await status(sdk.beta.sessions.resources.retrieve("sesrsc_nope", { session_id: session.id }))).toMatch(/^404 /);
    expect(await status(sdk.beta.sessions.resources.update("sesrsc_nope", { session_id: session.id, authorization_token: TOKEN }))).toMatch(/^404 /);
    expect(await status(sdk.beta.sessions.resources.delete("sesrsc_nope", { session_id: session.id }))).toMatch(/^404 /);

    // Another tenant's session is not found, whatever the call.
    const b = stack.client(KEY_B, { maxRetries: 0 }).sdk;
    expect(await status(b.beta.sessions.resources.list(session.id))).toMatch(/^404 /);
    expect(await status(b.beta.sessions.resources.retrieve(resource!.id, { session_id: session.id }))).toMatch(/^404 /);
    expect(await status(b.beta.sessions.resources.update(resource!.id, { session_id: session.id, authorization_token: TOKEN }))).toMatch(/^404 /);
    expect(await status(b.beta.sessions.resources.delete(resource!.id, { session_id: session.id }))).toMatch(/^404 /);
    expect(await status(b.beta.sessions.resources.add(session.id, repository("lib") as unknown as ResourceAddParams))).toMatch(/^404 /);
    expect((await sdk.beta.sessions.resources.list(session.id)).data).toHaveLength(1);
  });
});
