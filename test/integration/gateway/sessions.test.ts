/**
 * Sessions through the official SDK on real services: create from an agent version in an
 * environment, with a repository and vaults; the agent snapshot, status and usage; update,
 * list both ways, archive, delete; and tenant isolation: another tenant's objects are 404.
 */
import Anthropic from "@anthropic-ai/sdk";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_B, startStack, type CountingClient, type Stack } from "../../support/gateway.js";
import { eventually } from "../../support/eventually.js";

let stack: Stack;
let a: CountingClient;
let b: CountingClient;
let agentId: string;
let environmentId: string;

beforeAll(async () => {
  stack = await startStack({
    scenarios: [
      defineScenario("hello", [{ text: "Hello from the offline model." }], { onExhausted: "repeat-last" }),
      defineScenario("weather", [{ text: "Checking.", toolUses: [{ name: "get_weather", input: { city: "Paris" } }] }], { onExhausted: "repeat-last" }),
      defineScenario("slow", [{ text: "Thinking slowly.", ttftMs: 3000 }], { onExhausted: "repeat-last" }),
    ],
  });
  a = stack.client();
  b = stack.client(KEY_B);
  const agent = await a.sdk.beta.agents.create({
    name: "greeter",
    model: "claude-sonnet-5-5",
    system: "[scenario:hello] You greet.",
    tools: [{ type: "agent_toolset_20260401", default_config: { permission_policy: { type: "always_ask" } } }],
  });
  agentId = agent.id;
  environmentId = (await a.sdk.beta.environments.create({ name: "env" })).id;
});
afterAll(async () => {
  await stack?.stop();
});

async function untilIdle(client: Anthropic, id: string): Promise<Anthropic.Beta.Sessions.BetaManagedAgentsSession> {
  await eventually(async () => ((await client.beta.sessions.events.list(id)).data.some((e) => e.type === "session.status_idle") ? true : undefined), `session ${id} to go idle`, 20_000);
  return client.beta.sessions.retrieve(id);
}

describe("sessions", () => {
  it("creates a session with a snapshot of the agent, a repository and vaults", async () => {
    const vaultId = (await a.sdk.beta.vaults.create({ display_name: "user-1" })).id;
    const session = await a.sdk.beta.sessions.create({
      agent: agentId,
      environment_id: environmentId,
      title: "first",
      metadata: { ticket: "T-1" },
      vault_ids: [vaultId],
      resources: [{ type: "github_repository", url: "https://github.com/octocat/Hello-World.git", checkout: { type: "branch", name: "main" } }],
    });
    expect(session).toMatchObject({
      type: "session",
      status: "idle",
      title: "first",
      environment_id: environmentId,
      metadata: { ticket: "T-1" },
      vault_ids: [vaultId],
      archived_at: null,
      budget: null,
      outcome_evaluations: [],
      usage: { input_tokens: 0, output_tokens: 0 },
      agent: { id: agentId, type: "agent", version: 1, name: "greeter", system: "[scenario:hello] You greet.", multiagent: null },
      resources: [
        { type: "github_repository", url: "https://github.com/octocat/Hello-World.git", mount_path: "/workspace/Hello-World", checkout: { type: "branch", name: "main" } },
      ],
    });
    expect(session.id).toMatch(/^sesn_/);
    expect((session.resources[0] as Anthropic.Beta.Sessions.BetaManagedAgentsGitHubRepositoryResource).id).toMatch(/^sesrsc_/);

    // The agent's later versions do not change the session.
    await a.sdk.beta.agents.update(agentId, { system: "[scenario:hello] Changed." });
    expect((await a.sdk.beta.sessions.retrieve(session.id)).agent.system).toBe("[scenario:hello] You greet.");

    // The harness runs the snapshot: its model and its tools, with their policies.
    const { session: logged } = await stack.brain.log.client.getSession({ sessionId: session.id });
    expect(logged?.metadata).toMatchObject({ tenant: "tenant-a", agentId, agentVersion: 1, environmentId, title: "first", vaultIds: [vaultId] });
    // Its repository, for the sandboxes to clone (repositories.test.ts clones one for real).
    const resourceId = (session.resources[0] as Anthropic.Beta.Sessions.BetaManagedAgentsGitHubRepositoryResource).id;
    expect(logged?.metadata?.repositories).toEqual([{ resourceId, url: "https://github.com/octocat/Hello-World.git", mountPath: "Hello-World", checkout: "main" }]);
    expect(logged?.metadata?.agent?.model).toBe("claude-sonnet-5-5");
    expect(logged?.metadata?.agent?.tools.map((t) => t.name)).toEqual(["bash", "edit", "read", "write", "glob", "grep"]);
  });

  it("runs initial events and reports usage once the turn is done", async () => {
    const session = await a.sdk.beta.sessions.create({
      agent: { type: "agent", id: agentId, version: 1 },
      environment_id: environmentId,
      initial_events: [{ type: "user.message", content: [{ type: "text", text: "hi" }] }],
    });
    const done = await untilIdle(a.sdk, session.id);
    expect(done.status).toBe("idle");
    expect(done.usage.output_tokens).toBeGreaterThan(0);
    const u = done.usage;
    expect((u.input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0) + (u.cache_creation?.ephemeral_5m_input_tokens ?? 0)).toBeGreaterThan(0);
    expect(done.stats.duration_seconds).toBeGreaterThanOrEqual(0);
  });

  it("serves each session's primary thread: the session seen as a thread, with its events", async () => {
    const session = await a.sdk.beta.sessions.create({
      agent: agentId,
      environment_id: environmentId,
      initial_events: [{ type: "user.message", content: [{ type: "text", text: "hi" }] }],
    });
    const done = await untilIdle(a.sdk, session.id);
    const threads = [];
    for await (const t of a.sdk.beta.sessions.threads.list(session.id)) threads.push(t);
    expect(threads).toHaveLength(1);
    const [thread] = threads;
    expect(thread).toMatchObject({
      type: "session_thread",
      session_id: session.id,
      parent_thread_id: null,
      workflow_run_id: null,
      status: "idle",
      created_at: done.created_at,
      agent: { type: "agent", id: agentId, name: done.agent.name, model: done.agent.model },
      usage: { output_tokens: done.usage.output_tokens },
    });
    expect(thread!.id).toMatch(/^sthr_/);
    expect(thread!.agent).not.toHaveProperty("multiagent");
    expect(await a.sdk.beta.sessions.threads.retrieve(thread!.id, { session_id: session.id })).toEqual(thread);
    expect((await a.sdk.beta.sessions.threads.list(session.id, { statuses: ["running"] })).data).toEqual([]);
    // Its events are the session's, in the same order.
    const threadEvents = [];
    for await (const e of a.sdk.beta.sessions.threads.events.list(thread!.id, { session_id: session.id })) threadEvents.push(e.id);
    const sessionEvents = [];
    for await (const e of a.sdk.beta.sessions.events.list(session.id)) sessionEvents.push(e.id);
    expect(threadEvents).toEqual(sessionEvents);
    expect(threadEvents.length).toBeGreaterThan(3);
    // Its stream is the session's: a message sent now comes back on it.
    const stream = await a.sdk.beta.sessions.threads.events.stream(thread!.id, { session_id: session.id });
    await a.sdk.beta.sessions.events.send(session.id, { events: [{ type: "user.message", content: [{ type: "text", text: "again" }] }] });
    const seen: string[] = [];
    for await (const e of stream) {
      seen.push(e.type);
      if (e.type === "session.status_idle") break;
    }
    expect(seen).toContain("user.message");
    expect(seen).toContain("agent.message");
    // No other thread.
    await expect(a.sdk.beta.sessions.threads.retrieve("sthr_other", { session_id: session.id })).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    await expect(a.sdk.beta.sessions.threads.events.list("sthr_other", { session_id: session.id })).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    // Another tenant sees none of it, and cannot archive it.
    await expect(b.sdk.beta.sessions.threads.list(session.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    await expect(b.sdk.beta.sessions.threads.retrieve(thread!.id, { session_id: session.id })).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    await expect(b.sdk.beta.sessions.threads.archive(thread!.id, { session_id: session.id })).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    await expect(a.sdk.beta.sessions.threads.archive("sthr_other", { session_id: session.id })).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    // Archiving the only thread archives its session.
    const archived = await a.sdk.beta.sessions.threads.archive(thread!.id, { session_id: session.id });
    expect(archived.id).toBe(thread!.id);
    expect(archived.archived_at).toMatch(/^\d{4}-/);
    expect((await a.sdk.beta.sessions.retrieve(session.id)).archived_at).toBe(archived.archived_at);
    await expect(a.sdk.beta.sessions.events.send(session.id, { events: [{ type: "user.message", content: [{ type: "text", text: "more" }] }] })).rejects.toBeInstanceOf(Anthropic.BadRequestError);
  });

  it("applies agent_with_overrides to the snapshot only", async () => {
    const session = await a.sdk.beta.sessions.create({
      agent: { type: "agent_with_overrides", id: agentId, system: "[scenario:hello] overridden", tools: [] },
      environment_id: environmentId,
    });
    expect(session.agent).toMatchObject({ system: "[scenario:hello] overridden", tools: [] });
    expect((await a.sdk.beta.agents.retrieve(agentId)).system).toBe("[scenario:hello] Changed.");
  });

  it("refuses what it cannot honour, naming the field", async () => {
    const cases: Array<[Partial<Anthropic.Beta.SessionCreateParams>, string]> = [
      [{ resources: [{ type: "github_repository", url: "https://github.com/a/b", authorization_token: "" }] }, "resources[0].authorization_token:"],
      [{ resources: [{ type: "file", file_id: "file_1" }] }, "resources[0].type:"],
      [{ initial_events: [{ type: "user.message", content: [{ type: "text", text: "" }] }] }, "initial_events[0].content[0].text"],
      [{ agent: { type: "agent", id: agentId, version: 99 } }, "agent.version:"],
    ];
    for (const [extra, message] of cases) {
      const err = await a.sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId, ...extra }).catch((e: unknown) => e);
      expect(err, message).toBeInstanceOf(Anthropic.BadRequestError);
      expect((err as InstanceType<typeof Anthropic.APIError>).apiMessage).toContain(message);
    }
    const noEnv = await a.sdk.beta.sessions.create({ agent: agentId, environment_id: "env_nope" }).catch((e: unknown) => e);
    expect(noEnv).toBeInstanceOf(Anthropic.NotFoundError);
    expect((noEnv as InstanceType<typeof Anthropic.APIError>).errorCode).toBe("environment_not_found");
  });

  it("reads the agent's version and the environment together, and still tells each refusal apart", async () => {
    // The agent and the environment come from one statement (sessions/sources.ts): each case below is one side missing or archived.
    const refused = (p: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> =>
      p.then(
        () => expect.fail("created"),
        (e: unknown) => e as InstanceType<typeof Anthropic.APIError>,
      );
    const agent = await a.sdk.beta.agents.create({ name: "versioned", model: "claude-sonnet-5-5", system: "[scenario:hello] v1" });
    await a.sdk.beta.agents.update(agent.id, { version: 1, system: "[scenario:hello] v2" });
    const env = (await a.sdk.beta.environments.create({ name: "to archive" })).id;
    // A past version, the current one, and another tenant's agent or environment (not found: 404 naming it).
    expect((await a.sdk.beta.sessions.create({ agent: { type: "agent", id: agent.id, version: 1 }, environment_id: env })).agent).toMatchObject({ version: 1, system: "[scenario:hello] v1" });
    expect((await a.sdk.beta.sessions.create({ agent: agent.id, environment_id: env })).agent).toMatchObject({ version: 2, system: "[scenario:hello] v2" });
    const otherTenant = await refused(b.sdk.beta.sessions.create({ agent: agent.id, environment_id: env }));
    expect(otherTenant).toBeInstanceOf(Anthropic.NotFoundError);
    expect(otherTenant.apiMessage).toContain(agent.id);
    const otherEnv = (await b.sdk.beta.environments.create({ name: "b's" })).id;
    expect((await refused(a.sdk.beta.sessions.create({ agent: agent.id, environment_id: otherEnv }))).errorCode).toBe("environment_not_found");
    const unknown = await refused(a.sdk.beta.sessions.create({ agent: "agent_nope", environment_id: env }));
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect(unknown.apiMessage).toContain("agent_nope");
    // An unknown agent is named before an unknown environment, as when they were read apart.
    expect((await refused(a.sdk.beta.sessions.create({ agent: "agent_nope", environment_id: "env_nope" }))).apiMessage).toContain("agent_nope");
    expect((await refused(a.sdk.beta.sessions.create({ agent: { type: "agent", id: "agent_nope", version: 1 }, environment_id: env }))).status).toBe(404);

    await a.sdk.beta.environments.archive(env);
    const archivedEnv = await refused(a.sdk.beta.sessions.create({ agent: agent.id, environment_id: env }));
    expect(archivedEnv.errorCode).toBe("environment_archived");
    expect(archivedEnv.apiMessage).toMatch(/^environment_id: /);
    await a.sdk.beta.agents.archive(agent.id);
    const archivedAgent = await refused(a.sdk.beta.sessions.create({ agent: agent.id, environment_id: environmentId }));
    expect(archivedAgent).toBeInstanceOf(Anthropic.BadRequestError);
    expect(archivedAgent.apiMessage).toContain("is archived");
  });

  it("changes the agent's tools and MCP servers while the session is idle, never while it runs", async () => {
    const weather = { type: "custom" as const, name: "get_weather", description: "weather", input_schema: { type: "object" as const, properties: { city: { type: "string" } } } };
    const agent = await a.sdk.beta.agents.create({ name: "forecaster", model: "claude-sonnet-5-5", system: "[scenario:weather]" });
    const session = await a.sdk.beta.sessions.create({ agent: agent.id, environment_id: environmentId });
    const updated = await a.sdk.beta.sessions.update(session.id, { agent: { tools: [weather] } });
    expect(updated.agent.tools).toMatchObject([{ type: "custom", name: "get_weather" }]);
    expect((await a.sdk.beta.agents.retrieve(agent.id)).tools).toEqual([]); // the saved agent stays as it was

    // The next turn runs with the new tools: the model's get_weather call is the client's to answer.
    await a.sdk.beta.sessions.events.send(session.id, { events: [{ type: "user.message", content: [{ type: "text", text: "weather?" }] }] });
    await untilIdle(a.sdk, session.id);
    const events = (await a.sdk.beta.sessions.events.list(session.id)).data;
    expect(events.find((e) => e.type === "agent.custom_tool_use")).toMatchObject({ name: "get_weather", input: { city: "Paris" } });

    const badRef = await a.sdk.beta.sessions.update(session.id, { agent: { tools: [{ type: "mcp_toolset", mcp_server_name: "nope" }] } }).catch((e: unknown) => e);
    expect(badRef).toBeInstanceOf(Anthropic.BadRequestError);
    expect((badRef as InstanceType<typeof Anthropic.APIError>).apiMessage).toContain("agent.");

    const slow = await a.sdk.beta.sessions.create({ agent: { type: "agent_with_overrides", id: agent.id, system: "[scenario:slow]" }, environment_id: environmentId });
    await a.sdk.beta.sessions.events.send(slow.id, { events: [{ type: "user.message", content: [{ type: "text", text: "take your time" }] }] });
    await eventually(async () => ((await a.sdk.beta.sessions.retrieve(slow.id)).status === "running" ? true : undefined), "the slow session to run");
    const running = await a.sdk.beta.sessions.update(slow.id, { agent: { tools: [weather] } }).catch((e: unknown) => e);
    expect(running).toBeInstanceOf(Anthropic.BadRequestError);
    expect((running as InstanceType<typeof Anthropic.APIError>).apiMessage).toMatch(/agent.*running/);
    expect((await untilIdle(a.sdk, slow.id)).agent.tools).toEqual([]);
  });

  it("answers 413, not a 429 the SDK retries, when a request grows past a backend's message limit", async () => {
    // 3 MB of JSON under the gateway's body limit, but each 0 of the list takes 11 bytes as a
    // google.protobuf.Value: CreateSession carries the agent's schema, over 16 MiB.
    const zeros = new Array<number>(1_600_000).fill(0);
    const agent = await a.sdk.beta.agents.create({
      name: "large schema",
      model: "claude-sonnet-5-5",
      tools: [{ type: "custom", name: "pick", description: "Picks one", input_schema: { type: "object", properties: { n: { type: "integer", enum: zeros } } } }],
    });
    const before = a.requests();
    const err: unknown = await a.sdk.beta.sessions.create({ agent: agent.id, environment_id: environmentId }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as InstanceType<typeof Anthropic.APIError>).status).toBe(413);
    expect((err as Error).message).toContain("more than 16777216 bytes");
    expect(a.requests() - before).toBe(1);
  });

  it("updates title and metadata, lists both ways, archives and deletes", async () => {
    const other = await b.sdk.beta.agents.create({ name: "b", model: "claude-sonnet-5-5" });
    const env = await b.sdk.beta.environments.create({ name: "b" });
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await b.sdk.beta.sessions.create({ agent: other.id, environment_id: env.id, title: `s${i}` }));

    const updated = await b.sdk.beta.sessions.update(made[0]!.id, { title: "renamed", metadata: { k: "v" } });
    expect(updated).toMatchObject({ title: "renamed", metadata: { k: "v" } });
    expect((await b.sdk.beta.sessions.update(made[0]!.id, { metadata: { k: null } })).metadata).toEqual({});

    const newest = [];
    for await (const s of b.sdk.beta.sessions.list({ limit: 2 })) newest.push(s.id);
    expect(newest).toEqual(made.map((s) => s.id).reverse());
    const oldestFirst = await b.sdk.beta.sessions.list({ limit: 2, order: "asc" });
    expect(oldestFirst.data.map((s) => s.id)).toEqual([made[0]!.id, made[1]!.id]);
    const second = await oldestFirst.getNextPage();
    expect(second.data.map((s) => s.id)).toEqual([made[2]!.id, made[3]!.id]);
    expect(second.prev_page).toEqual(expect.any(String));
    const back = await b.sdk.beta.sessions.list({ limit: 2, order: "asc", page: second.prev_page });
    expect(back.data.map((s) => s.id)).toEqual([made[0]!.id, made[1]!.id]);
    const idle = await b.sdk.beta.sessions.list({ statuses: ["idle"], agent_id: other.id, agent_version: 1 });
    expect(idle.data).toHaveLength(5);
    // agent_version applies only with agent_id: alone it is ignored, not refused.
    expect((await b.sdk.beta.sessions.list({ agent_version: 99 })).data.map((s) => s.id)).toEqual((await b.sdk.beta.sessions.list()).data.map((s) => s.id));
    expect((await b.sdk.beta.sessions.list({ statuses: ["running"] })).data).toHaveLength(0);

    const archived = await b.sdk.beta.sessions.archive(made[1]!.id);
    expect(archived.archived_at).toEqual(expect.any(String));
    expect((await b.sdk.beta.sessions.list()).data.map((s) => s.id)).not.toContain(made[1]!.id);
    const send = await b.sdk.beta.sessions.events.send(made[1]!.id, { events: [{ type: "user.message", content: [{ type: "text", text: "hi" }] }] }).catch((e: unknown) => e);
    expect(send).toBeInstanceOf(Anthropic.BadRequestError);

    expect(await b.sdk.beta.sessions.delete(made[2]!.id)).toEqual({ id: made[2]!.id, type: "session_deleted" });
    await expect(b.sdk.beta.sessions.retrieve(made[2]!.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    const { session: logged } = await stack.brain.log.client.getSession({ sessionId: made[2]!.id });
    expect(logged?.status).toBe(3); // SESSION_STATUS_TERMINATED: no harness works for it any more
  });
});

describe("tenant isolation", () => {
  it("shows tenant B nothing of tenant A, and 404s every touch", async () => {
    const session = await a.sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId });
    const notFound = Anthropic.NotFoundError;
    await expect(b.sdk.beta.agents.retrieve(agentId)).rejects.toBeInstanceOf(notFound);
    await expect(b.sdk.beta.agents.update(agentId, { name: "mine" })).rejects.toBeInstanceOf(notFound);
    await expect(b.sdk.beta.agents.archive(agentId)).rejects.toBeInstanceOf(notFound);
    await expect(b.sdk.beta.agents.versions.list(agentId)).rejects.toBeInstanceOf(notFound);
    await expect(b.sdk.beta.environments.retrieve(environmentId)).rejects.toBeInstanceOf(notFound);
    await expect(b.sdk.beta.environments.delete(environmentId)).rejects.toBeInstanceOf(notFound);
    await expect(b.sdk.beta.sessions.retrieve(session.id)).rejects.toBeInstanceOf(notFound);
    await expect(b.sdk.beta.sessions.delete(session.id)).rejects.toBeInstanceOf(notFound);
    await expect(b.sdk.beta.sessions.events.list(session.id)).rejects.toBeInstanceOf(notFound);
    await expect(
      b.sdk.beta.sessions.events.send(session.id, { events: [{ type: "user.interrupt" }] }),
    ).rejects.toBeInstanceOf(notFound);
    await expect(b.sdk.beta.sessions.events.stream(session.id)).rejects.toBeInstanceOf(notFound);
    // B cannot build on A's objects either.
    await expect(b.sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId })).rejects.toBeInstanceOf(notFound);

    const bAgents = [];
    for await (const x of b.sdk.beta.agents.list()) bAgents.push(x.id);
    expect(bAgents).not.toContain(agentId);
    const bSessions = [];
    for await (const x of b.sdk.beta.sessions.list({ include_archived: true })) bSessions.push(x.id);
    expect(bSessions).not.toContain(session.id);
    // And A's session is untouched.
    expect((await a.sdk.beta.sessions.retrieve(session.id)).status).toBe("idle");
  });
});
