/**
 * Sessions with github_repository resources, end to end through the official SDK, on real
 * services: the session's repository (a real git smart-HTTP server that demands a token) is cloned
 * at provisioning through the credential vault proxy; the agent (the offline model) runs bash in
 * the bubblewrap sandbox: git log, an edit, a commit, a push, which lands on the server. The token
 * reached the server, and nowhere else: not in an HTTP response, an event, a database row (the
 * vault's is encrypted), a file of the sandbox or a log line. Then the resources API: list,
 * retrieve, add, update (a rotated token works at the next git command), delete, concurrent
 * changes, and bad inputs answered with 4xx naming the field. Repositories that do not clone, and
 * clone later: repository-clones.test.ts.
 */
import { randomBytes } from "node:crypto";
import type Anthropic from "@anthropic-ai/sdk";
import type { ResourceAddParams } from "@anthropic-ai/sdk/resources/beta/sessions/resources";
import { newEvent } from "@metaharness/events";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sandboxFiles } from "../../security/sandbox-files.js";
import { KEY_B, raw } from "../../support/gateway.js";
import { assertAbsent, idOf, startRepositoryStack, type RepositoryStack } from "../../support/repositories.js";

const ROTATED = `ghs_rotated_${randomBytes(12).toString("hex")}`;

let fixture: RepositoryStack;
let TOKEN: string;
let git: RepositoryStack["git"];
let stack: RepositoryStack["stack"];
let sdk: RepositoryStack["sdk"];
let bodies: RepositoryStack["bodies"];
let logs: RepositoryStack["logs"];
let agentId: RepositoryStack["agentId"];
let environmentId: RepositoryStack["environmentId"];
let repository: RepositoryStack["repository"];
let untilIdle: RepositoryStack["untilIdle"];
let sh: RepositoryStack["sh"];
beforeAll(async () => {
  fixture = await startRepositoryStack();
  ({ token: TOKEN, git, stack, sdk, bodies, logs, agentId, environmentId, repository, untilIdle, sh } = fixture);
});
afterAll(async () => {
  await fixture?.stop();
});

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
    for (const f of files) assertAbsent(`sandbox file ${f.path}`, f.content, TOKEN);
    await sdk.beta.sessions.resources.list(sessionId);
    await sdk.beta.sessions.retrieve(sessionId);
    assertAbsent("HTTP responses", bodies.join("\n"), TOKEN);
    assertAbsent("events", JSON.stringify(events), TOKEN);
    assertAbsent("the gateway's database", await databaseText(stack.db.url), TOKEN);
    assertAbsent("the session log's database", await databaseText(stack.brain.log.db.url), TOKEN);
    assertAbsent("the broker's database", await databaseText(stack.brain.broker!.db.url), TOKEN);
    assertAbsent("the vault's database (encrypted)", await databaseText(stack.vault!.db.url), TOKEN);
    const services = new Set(logs.lines.map((l) => (JSON.parse(l) as { service: string }).service));
    expect([...services].sort()).toEqual(["credential-vault-proxy", "gateway", "harness", "sandbox-broker", "session-log"]);
    assertAbsent("the logs", logs.lines.join(""), TOKEN);
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
    assertAbsent("HTTP responses", bodies.join("\n"), ROTATED);

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
    assertAbsent("the logs", logs.lines.join(""), ROTATED);
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
