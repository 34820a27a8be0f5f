/**
 * Agents through the official SDK against the gateway: create with tools and permission
 * policies, retrieve (current and past versions), update with optimistic concurrency, list with
 * the SDK's cursor pagination, versions, archive; bad input is a 400 naming the field.
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type CountingClient, type Stack } from "../../support/gateway.js";

let stack: Stack;
let client: CountingClient;
beforeAll(async () => {
  stack = await startStack({ scenarios: [] });
  client = stack.client();
});
afterAll(async () => {
  await stack?.stop();
});

const weatherTool = {
  type: "custom" as const,
  name: "get_weather",
  description: "Current weather of a city",
  input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] },
};

describe("agents", () => {
  it("creates an agent with its tools resolved, and retrieves it", async () => {
    const agent = await client.sdk.beta.agents.create({
      name: "Weather bot",
      model: "claude-sonnet-5-5",
      system: "You answer about the weather.",
      tools: [
        { type: "agent_toolset_20260401", configs: [{ name: "bash", permission_policy: { type: "always_ask" } }, { name: "web_search", enabled: false }] },
        weatherTool,
      ],
      metadata: { team: "forecast" },
    });
    expect(agent).toMatchObject({
      type: "agent",
      name: "Weather bot",
      version: 1,
      model: { id: "claude-sonnet-5-5" },
      system: "You answer about the weather.",
      description: null,
      archived_at: null,
      multiagent: null,
      skills: [],
      mcp_servers: [],
      execution_identity: { type: "service_account" },
      metadata: { team: "forecast" },
    });
    expect(agent.id).toMatch(/^agent_[0-9A-Z]{26}$/);
    expect(agent.tools[0]).toEqual({
      type: "agent_toolset_20260401",
      default_config: { enabled: true, permission_policy: { type: "always_allow" } },
      configs: [
        { name: "bash", type: "bash", enabled: true, permission_policy: { type: "always_ask" } },
        { name: "web_search", type: "web_search", enabled: false, permission_policy: { type: "always_allow" } },
      ],
    });
    expect(agent.tools[1]).toEqual(weatherTool);
    expect(await client.sdk.beta.agents.retrieve(agent.id)).toEqual(agent);
  });

  it("versions updates, keeps old versions readable, and refuses a stale version with 409 (not retried)", async () => {
    const agent = await client.sdk.beta.agents.create({ name: "v", model: "claude-sonnet-5-5" });
    const v2 = await client.sdk.beta.agents.update(agent.id, { version: 1, description: "second", metadata: { a: "1" } });
    expect(v2).toMatchObject({ version: 2, description: "second", metadata: { a: "1" }, created_at: agent.created_at });
    // Nothing changes: no new version.
    const same = await client.sdk.beta.agents.update(agent.id, { version: 2, description: "second" });
    expect(same.version).toBe(2);

    const before = client.requests();
    const stale = await client.sdk.beta.agents.update(agent.id, { version: 1, name: "lost update" }).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(Anthropic.ConflictError);
    expect((stale as InstanceType<typeof Anthropic.ConflictError>).error).toMatchObject({ type: "error", error: { type: "conflict_error" } });
    expect(client.requests() - before).toBe(1);

    expect((await client.sdk.beta.agents.retrieve(agent.id, { version: 1 })).description).toBeNull();
    expect((await client.sdk.beta.agents.retrieve(agent.id)).name).toBe("v");
    const versions = [];
    for await (const v of client.sdk.beta.agents.versions.list(agent.id, { limit: 1 })) versions.push(v.version);
    expect(versions).toEqual([2, 1]);
    // Metadata is a patch: null deletes a key.
    const v3 = await client.sdk.beta.agents.update(agent.id, { metadata: { a: null, b: "2" } });
    expect(v3).toMatchObject({ version: 3, metadata: { b: "2" } });
  });

  it("lists newest first with cursor pagination, and archives", async () => {
    const fresh = stack.client("mh-test-key-tenant-b-0123456789");
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await fresh.sdk.beta.agents.create({ name: `agent ${i}`, model: "claude-haiku-5-5" }));
    const first = await fresh.sdk.beta.agents.list({ limit: 2 });
    expect(first.data.map((a) => a.name)).toEqual(["agent 4", "agent 3"]);
    expect(first.next_page).toEqual(expect.any(String));
    const all = [];
    for await (const a of fresh.sdk.beta.agents.list({ limit: 2 })) all.push(a.id);
    expect(all).toEqual(made.map((a) => a.id).reverse());

    const archived = await fresh.sdk.beta.agents.archive(made[0]!.id);
    expect(archived.archived_at).toEqual(expect.any(String));
    const listed = [];
    for await (const a of fresh.sdk.beta.agents.list()) listed.push(a.id);
    expect(listed).not.toContain(made[0]!.id);
    const withArchived = [];
    for await (const a of fresh.sdk.beta.agents.list({ include_archived: true })) withArchived.push(a.id);
    expect(withArchived).toContain(made[0]!.id);
    await expect(fresh.sdk.beta.agents.update(made[0]!.id, { name: "x" })).rejects.toBeInstanceOf(Anthropic.BadRequestError);
  });

  it("answers bad input with a 400 naming the field", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ model: "claude-sonnet-5-5" }, "name: Field required"],
      [{ name: "x", model: "claude-sonnet-5-5", colour: "blue" }, "colour: Extra inputs are not permitted"],
      [{ name: "x", model: "claude-sonnet-5-5", tools: [{ ...weatherTool, name: "bad name!" }] }, "tools[0].name:"],
      [{ name: "x", model: "claude-sonnet-5-5", tools: [{ type: "hammer" }] }, "tools[0].type:"],
      [{ name: "x", model: "claude-sonnet-5-5", tools: [weatherTool, weatherTool] }, "tools[1].name:"],
      [{ name: "x", model: "claude-sonnet-5-5", tools: [{ type: "mcp_toolset", mcp_server_name: "nowhere" }] }, "tools[0].mcp_server_name:"],
      [{ name: "x", model: "claude-sonnet-5-5", skills: [{ type: "anthropic", skill_id: "xlsx" }] }, "skills:"],
      // A counter-example of test/fuzz/http.test.ts (it was a 500).
      [{ name: "\ud800", model: "claude-sonnet-5-5" }, "a lone surrogate"],
    ];
    for (const [body, message] of cases) {
      const err = await client.sdk.beta.agents.create(body as unknown as Anthropic.Beta.AgentCreateParams).catch((e: unknown) => e);
      expect(err, JSON.stringify(body)).toBeInstanceOf(Anthropic.BadRequestError);
      const apiError = err as InstanceType<typeof Anthropic.BadRequestError>;
      expect(apiError.error).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
      expect(apiError.apiMessage).toContain(message);
    }
  });

  // A counter-example of test/fuzz/http.test.ts: a version past what the store holds was a 500.
  it("refuses a version past the largest one (2^31 - 1) with a 400 naming it, to retrieve or to update", async () => {
    const agent = await client.sdk.beta.agents.create({ name: "v", model: "claude-sonnet-5-5" });
    for (const call of [
      () => client.sdk.beta.agents.retrieve(agent.id, { version: 2 ** 53 }),
      () => client.sdk.beta.agents.update(agent.id, { version: 2 ** 31, name: "w" }),
    ]) {
      const err = await call().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      expect((err as InstanceType<typeof Anthropic.BadRequestError>).apiMessage).toContain("version");
    }
  });

  it("refuses oversized metadata with the SDK's typed invalid_metadata error", async () => {
    const metadata = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"]));
    const err = await client.sdk.beta.agents.create({ name: "m", model: "claude-sonnet-5-5", metadata }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.APIError>).errorCode).toBe("invalid_metadata");
  });
});
