/**
 * Vaults through the official SDK on real services (the gateway in front of the credential vault
 * proxy): create, retrieve, update, list in pages, archive, delete; tenant isolation (another
 * tenant's vault and its credentials are 404); session vault_ids checked at create; bad inputs
 * answered with the right 4xx naming the field; and a gateway without a proxy saying so.
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_B, apiFailure as failure, raw, startStack, type CountingClient, type Stack } from "../../support/gateway.js";

let stack: Stack;
let a: CountingClient;
let b: CountingClient;
let agentId: string;
let environmentId: string;

beforeAll(async () => {
  stack = await startStack({ scenarios: [] });
  a = stack.client(undefined, { maxRetries: 0 });
  b = stack.client(KEY_B, { maxRetries: 0 });
  agentId = (await a.sdk.beta.agents.create({ name: "a", model: "claude-sonnet-5-5" })).id;
  environmentId = (await a.sdk.beta.environments.create({ name: "e" })).id;
});
afterAll(async () => {
  await stack?.stop();
});

const mcpOAuth = (url = "https://mcp.example.com/mcp"): Anthropic.Beta.Vaults.BetaManagedAgentsMCPOAuthCreateParams => ({
  type: "mcp_oauth",
  mcp_server_url: url,
  access_token: "at-vaults-test-0001",
  expires_at: new Date(Date.now() + 3600_000).toISOString(),
});

describe("vaults", () => {
  it("are created, read, updated, listed in pages, archived and deleted", async () => {
    const created = await a.sdk.beta.vaults.create({ display_name: "Alice", metadata: { external_user_id: "usr_1", drop: "me" } });
    expect(created).toEqual({
      id: expect.stringMatching(/^vlt_[0-9a-f]{24}$/) as unknown,
      type: "vault",
      display_name: "Alice",
      metadata: { external_user_id: "usr_1", drop: "me" },
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown,
      updated_at: expect.any(String) as unknown,
      archived_at: null,
    });
    expect(await a.sdk.beta.vaults.retrieve(created.id)).toEqual(created);
    const updated = await a.sdk.beta.vaults.update(created.id, { display_name: "Alice B.", metadata: { drop: null, tier: "gold" } });
    expect([updated.display_name, updated.metadata]).toEqual(["Alice B.", { external_user_id: "usr_1", tier: "gold" }]);
    expect(Date.parse(updated.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
    expect((await a.sdk.beta.vaults.update(created.id, { display_name: null })).display_name).toBe("Alice B.");

    const more = [await a.sdk.beta.vaults.create({ display_name: "Bob" }), await a.sdk.beta.vaults.create({ display_name: "Carol" })];
    const first = await a.sdk.beta.vaults.list({ limit: 1 });
    expect(first.data).toHaveLength(1);
    expect(first.next_page).toEqual(expect.any(String));
    const all: string[] = [];
    for await (const v of a.sdk.beta.vaults.list({ limit: 1 })) all.push(v.id);
    expect(all).toEqual([created.id, ...more.map((v) => v.id)]);

    const archived = await a.sdk.beta.vaults.archive(more[0]!.id);
    expect(archived.archived_at).not.toBeNull();
    expect((await a.sdk.beta.vaults.archive(more[0]!.id)).archived_at).toBe(archived.archived_at);
    expect((await a.sdk.beta.vaults.list()).data.map((v) => v.id)).toEqual([created.id, more[1]!.id]);
    expect((await a.sdk.beta.vaults.list({ include_archived: true })).data).toHaveLength(3);
    expect((await failure(a.sdk.beta.vaults.update(more[0]!.id, { display_name: "x" }))).status).toBe(400);
    const add = await failure(a.sdk.beta.vaults.credentials.create(more[0]!.id, { auth: mcpOAuth() }));
    expect(add.status).toBe(400);

    expect(await a.sdk.beta.vaults.delete(more[1]!.id)).toEqual({ id: more[1]!.id, type: "vault_deleted" });
    expect(await failure(a.sdk.beta.vaults.retrieve(more[1]!.id))).toBeInstanceOf(Anthropic.NotFoundError);
    expect(await failure(a.sdk.beta.vaults.retrieve("vlt_nonsense"))).toBeInstanceOf(Anthropic.NotFoundError);
  });

  it("keep tenants apart: another tenant's vault and credentials are not found", async () => {
    const mine = await a.sdk.beta.vaults.create({ display_name: "private" });
    const credential = await a.sdk.beta.vaults.credentials.create(mine.id, { auth: mcpOAuth() });
    const notFound = async (p: Promise<unknown>): Promise<void> => expect(await failure(p)).toBeInstanceOf(Anthropic.NotFoundError);
    await notFound(b.sdk.beta.vaults.retrieve(mine.id));
    await notFound(b.sdk.beta.vaults.update(mine.id, { display_name: "stolen" }));
    await notFound(b.sdk.beta.vaults.archive(mine.id));
    await notFound(b.sdk.beta.vaults.delete(mine.id));
    await notFound(b.sdk.beta.vaults.credentials.list(mine.id));
    await notFound(b.sdk.beta.vaults.credentials.retrieve(credential.id, { vault_id: mine.id }));
    await notFound(b.sdk.beta.vaults.credentials.create(mine.id, { auth: mcpOAuth("https://other.example.com/mcp") }));
    await notFound(b.sdk.beta.vaults.credentials.update(credential.id, { vault_id: mine.id, auth: { type: "mcp_oauth", access_token: "stolen-token-1" } }));
    await notFound(b.sdk.beta.vaults.credentials.mcpOAuthValidate(credential.id, { vault_id: mine.id }));
    await notFound(b.sdk.beta.vaults.credentials.archive(credential.id, { vault_id: mine.id }));
    await notFound(b.sdk.beta.vaults.credentials.delete(credential.id, { vault_id: mine.id }));
    expect((await b.sdk.beta.vaults.list()).data.map((v) => v.id)).not.toContain(mine.id);
    // A credential is found only in its own vault.
    const other = await a.sdk.beta.vaults.create({ display_name: "other" });
    await notFound(a.sdk.beta.vaults.credentials.retrieve(credential.id, { vault_id: other.id }));
    // Untouched by all that.
    expect(await a.sdk.beta.vaults.retrieve(mine.id)).toMatchObject({ display_name: "private", archived_at: null });
    expect((await a.sdk.beta.vaults.credentials.retrieve(credential.id, { vault_id: mine.id })).archived_at).toBeNull();
  });
});

describe("sessions naming vaults", () => {
  it("are created with the tenant's active vaults only, naming the vault at fault", async () => {
    const good = await a.sdk.beta.vaults.create({ display_name: "good" });
    const theirs = await b.sdk.beta.vaults.create({ display_name: "theirs" });
    const gone = await a.sdk.beta.vaults.create({ display_name: "gone" });
    await a.sdk.beta.vaults.archive(gone.id);
    const create = (vault_ids: string[]) => a.sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId, vault_ids });

    const unknown = await failure(create([good.id, "vlt_000000000000000000000000"]));
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect(unknown.apiMessage).toMatch(/^vault_ids\[1\]: /);
    const foreign = await failure(create([theirs.id]));
    expect(foreign).toBeInstanceOf(Anthropic.NotFoundError);
    expect(foreign.apiMessage).toMatch(/^vault_ids\[0\]: /);
    const archived = await failure(create([good.id, gone.id]));
    expect(archived).toBeInstanceOf(Anthropic.BadRequestError);
    expect(archived.apiMessage).toMatch(/^vault_ids\[1\]: .*archived/);

    const session = await create([good.id, good.id]);
    expect(session.vault_ids).toEqual([good.id]);
    const { session: logged } = await stack.brain.log.client.getSession({ sessionId: session.id });
    expect(logged?.metadata?.vaultIds).toEqual([good.id]);
    const change = await failure(a.sdk.beta.sessions.update(session.id, { vault_ids: [good.id] }));
    expect(change.apiMessage).toMatch(/^vault_ids: /);
  });
});

describe("bad input", () => {
  it("is refused with a 4xx naming the field, never quoting a secret", async () => {
    const vault = await a.sdk.beta.vaults.create({ display_name: "inputs" });
    const says = async (p: Promise<unknown>, status: number, message: RegExp): Promise<void> => {
      const err = await failure(p);
      expect([err.status, err.apiMessage]).toEqual([status, expect.stringMatching(message)]);
    };
    const create = (body: unknown) => a.sdk.beta.vaults.credentials.create(vault.id, body as Anthropic.Beta.Vaults.CredentialCreateParams);
    await says(a.sdk.beta.vaults.create({} as Anthropic.Beta.Vaults.VaultCreateParams), 400, /^display_name: Field required/);
    await says(create({}), 400, /^auth: Field required/);
    await says(create({ auth: { type: "mcp_oauth", mcp_server_url: "https://mcp.example.com" } }), 400, /^auth\.access_token: Field required/);
    await says(create({ auth: { type: "api_key", key: "k" } }), 400, /^auth\.type: /);
    await says(
      create({ auth: { type: "environment_variable", secret_name: "API_KEY", secret_value: "sv-123456", networking: { type: "unrestricted" } } }),
      400,
      /^auth\.type: environment_variable credentials are not supported/,
    );
    await says(create({ auth: { ...mcpOAuth(), expires_at: "2001-01-01T00:00:00Z" } }), 400, /^auth\.expires_at: must be in the future/);
    await says(create({ auth: mcpOAuth("file:///etc/passwd") }), 400, /^auth\.mcp_server_url: must be an http or https URL/);
    await says(create({ auth: mcpOAuth("https://user:pw-secret-77@mcp.example.com/") }), 400, /^auth\.mcp_server_url: must not carry credentials/);
    await says(create({ auth: mcpOAuth(), metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])) }), 400, /^metadata: /);

    const credential = await create({ auth: mcpOAuth() });
    const id = (credential as { id: string }).id;
    const update = (auth: unknown) =>
      a.sdk.beta.vaults.credentials.update(id, { vault_id: vault.id, auth } as Anthropic.Beta.Vaults.CredentialUpdateParams);
    await says(update({ type: "static_bearer", token: "tok-123456" }), 400, /^auth\.type: /);
    await says(update({ type: "mcp_oauth", refresh: { refresh_token: "rt-123456" } }), 400, /^auth\.refresh\.refresh_token: /);
    await says(update({ type: "mcp_oauth", expires_at: "yesterday" }), 400, /^auth\.expires_at: /);
    const tooMany = await failure(
      a.sdk.beta.vaults.update(vault.id, { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])) }),
    );
    expect(tooMany.errorCode).toBe("invalid_metadata");

    // A body that is not JSON: the error does not quote it.
    const res = await raw(stack, "POST", `/v1/vaults/${vault.id}/credentials`, { body: '{"auth":{"type":"static_bearer","token":"tok-not-json-4242"' });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.json)).not.toContain("tok-not-json-4242");
  });
});

describe("a gateway without a credential vault proxy", () => {
  let bare: Stack;
  beforeAll(async () => {
    bare = await startStack({ scenarios: [], vault: false });
  });
  afterAll(async () => {
    await bare?.stop();
  });

  it("says vaults are not available in this deployment", async () => {
    const sdk = bare.client(undefined, { maxRetries: 0 }).sdk;
    const err = await failure(sdk.beta.vaults.create({ display_name: "x" }));
    expect(err).toBeInstanceOf(Anthropic.NotImplementedError);
    expect([err.status, err.errorCode]).toEqual([501, "credential_vault_unconfigured"]);
    expect(err.apiMessage).toMatch(/credential vault proxy/);
    expect(err.headers?.get("x-should-retry")).toBe("false");
    expect(await failure(sdk.beta.vaults.credentials.list("vlt_x"))).toBeInstanceOf(Anthropic.NotImplementedError);

    const agent = await sdk.beta.agents.create({ name: "a", model: "claude-sonnet-5-5" });
    const environment = await sdk.beta.environments.create({ name: "e" });
    const session = await failure(sdk.beta.sessions.create({ agent: agent.id, environment_id: environment.id, vault_ids: ["vlt_x"] }));
    expect([session.status, session.errorCode]).toEqual([501, "credential_vault_unconfigured"]);
    expect(session.apiMessage).toMatch(/^vault_ids: /);
    expect((await sdk.beta.sessions.create({ agent: agent.id, environment_id: environment.id })).vault_ids).toEqual([]);
  });
});
