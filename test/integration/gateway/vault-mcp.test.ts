/**
 * Vault credentials through the official SDK, end to end on real services: an MCP OAuth credential
 * for a real MCP server (behind a real OAuth token endpoint) is created, read back without its
 * secrets, validated, rotated and refreshed; an agent with an MCP server runs in a session naming
 * the vault, the offline model calls the MCP tool, the server receives the vault's token, and the
 * answer comes back as agent.mcp_tool_result. Then every event of the session, every response the
 * gateway sent and every log line of the gateway and the proxy are scanned for every secret.
 */
import Anthropic from "@anthropic-ai/sdk";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LogCapture } from "../../support/log-capture.js";
import { eventually } from "../../support/eventually.js";
import { KEY_A, apiFailure as failure, startStack, type Stack } from "../../support/gateway.js";
import { startMcpServer, type TestMcpServer } from "../../support/mcp-server.js";
import { startOAuthServer, type OAuthServer } from "../../support/oauth-server.js";

type Event = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;

const CLIENT_SECRET = "client-secret-vault-mcp-5f1e2d";
const STATIC_TOKEN = "static-bearer-vault-mcp-9c8b7a";
const STATIC_ROTATED = "static-bearer-rotated-3e4f5a";

const scenarios = [
  defineScenario("mcp-add", [
    { toolUses: [{ name: "add", input: { a: 19, b: 23 } }] },
    (ctx) => ({ text: `the server says ${ctx.lastToolResult?.content ?? "?"} (error: ${String(ctx.lastToolResult?.isError)})` }),
  ]),
];

const logs = new LogCapture();
/** Every response body the gateway sent to `sdk`. */
const responses: string[] = [];
/** Every bearer token the MCP server was shown. */
const presented: string[] = [];
let stack: Stack;
let oauth: OAuthServer;
let mcp: TestMcpServer;
let sdk: Anthropic;

beforeAll(async () => {
  oauth = await startOAuthServer({ clientId: "mh-gw", clientSecret: CLIENT_SECRET, method: "client_secret_post" });
  const staticTokens = new Set([STATIC_TOKEN]);
  mcp = await startMcpServer((t) => {
    presented.push(t);
    return oauth.isValid(t) || staticTokens.has(t);
  });
  stack = await startStack({ scenarios, logger: (service) => logs.logger(service) });
  sdk = new Anthropic({
    apiKey: KEY_A,
    baseURL: stack.gateway.url,
    maxRetries: 0,
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      responses.push(await res.clone().text());
      return res;
    },
  });
});
afterAll(async () => {
  await stack?.stop();
  await mcp?.close();
  await oauth?.close();
});

async function untilTurnEnds(sessionId: string): Promise<Event[]> {
  let events: Event[] = [];
  return eventually(
    async () => {
      events = [];
      for await (const e of sdk.beta.sessions.events.list(sessionId)) events.push(e);
      return events.some((e) => e.type === "session.error" || e.type === "session.status_idle") ? events : undefined;
    },
    () => `the turn to end: ${events.map((e) => e.type).join(", ")}`,
    30_000,
  );
}

function secrets(): string[] {
  return [...oauth.issued, CLIENT_SECRET, STATIC_TOKEN, STATIC_ROTATED];
}

describe("an MCP OAuth credential in a vault", () => {
  let vaultId: string;
  let credentialId: string;

  it("is stored, shown without its secrets, and validated against the server", async () => {
    vaultId = (await sdk.beta.vaults.create({ display_name: "Alice", metadata: { user: "alice" } })).id;
    const pair = oauth.issue(3600);
    const created = await sdk.beta.vaults.credentials.create(vaultId, {
      display_name: "calculator",
      metadata: { purpose: "math" },
      auth: {
        type: "mcp_oauth",
        mcp_server_url: mcp.url,
        access_token: pair.accessToken,
        expires_at: pair.expiresAt.toISOString(),
        refresh: {
          client_id: "mh-gw",
          refresh_token: pair.refreshToken,
          token_endpoint: oauth.url,
          token_endpoint_auth: { type: "client_secret_post", client_secret: CLIENT_SECRET },
          scope: "tools",
        },
      },
    });
    credentialId = created.id;
    expect(created).toEqual({
      id: expect.stringMatching(/^vcrd_[0-9a-f]{24}$/) as unknown,
      type: "vault_credential",
      vault_id: vaultId,
      display_name: "calculator",
      metadata: { purpose: "math" },
      auth: {
        type: "mcp_oauth",
        mcp_server_url: mcp.url,
        expires_at: pair.expiresAt.toISOString(),
        refresh: { client_id: "mh-gw", token_endpoint: oauth.url, token_endpoint_auth: { type: "client_secret_post" }, resource: null, scope: "tools" },
      },
      created_at: expect.any(String) as unknown,
      updated_at: expect.any(String) as unknown,
      archived_at: null,
    });
    expect(await sdk.beta.vaults.credentials.retrieve(credentialId, { vault_id: vaultId })).toEqual(created);
    expect((await sdk.beta.vaults.credentials.list(vaultId)).data).toEqual([created]);

    const valid = await sdk.beta.vaults.credentials.mcpOAuthValidate(credentialId, { vault_id: vaultId });
    expect(valid).toMatchObject({ type: "vault_credential_validation", status: "valid", has_refresh_token: true, mcp_probe: null, refresh: null });

    // The server revokes the token: validation refreshes it (once) and the new one works.
    oauth.revokeAll();
    const before = oauth.refreshes;
    const refreshed = await sdk.beta.vaults.credentials.mcpOAuthValidate(credentialId, { vault_id: vaultId });
    expect(refreshed).toMatchObject({ status: "valid", mcp_probe: null, refresh: { status: "succeeded", http_response: null } });
    expect(oauth.refreshes).toBe(before + 1);
  });

  it("refuses a second active credential for the same server in the vault", async () => {
    const err = await failure(
      sdk.beta.vaults.credentials.create(vaultId, { auth: { type: "static_bearer", mcp_server_url: `${mcp.url}/`, token: STATIC_TOKEN } }),
    );
    expect(err).toBeInstanceOf(Anthropic.ConflictError);
    expect(err.apiMessage).toMatch(/^auth\.mcp_server_url: /);
  });

  it("is rotated in place: the next validation and the next session use the new token", async () => {
    const pair = oauth.issue(3600);
    const updated = await sdk.beta.vaults.credentials.update(credentialId, {
      vault_id: vaultId,
      display_name: "calculator v2",
      metadata: { purpose: null, rotated: "yes" },
      auth: {
        type: "mcp_oauth",
        access_token: pair.accessToken,
        expires_at: pair.expiresAt.toISOString(),
        refresh: { refresh_token: pair.refreshToken, scope: "", token_endpoint_auth: { type: "client_secret_post", client_secret: CLIENT_SECRET } },
      },
    });
    expect(updated).toMatchObject({ display_name: "calculator v2", metadata: { rotated: "yes" }, auth: { expires_at: pair.expiresAt.toISOString() } });
    expect((updated.auth as Anthropic.Beta.Vaults.BetaManagedAgentsMCPOAuthAuthResponse).refresh?.scope).toBeNull();
    presented.length = 0;
    expect((await sdk.beta.vaults.credentials.mcpOAuthValidate(credentialId, { vault_id: vaultId })).status).toBe("valid");
    expect(new Set(presented)).toEqual(new Set([pair.accessToken]));
    // Absent keeps the name, null clears it.
    expect((await sdk.beta.vaults.credentials.update(credentialId, { vault_id: vaultId, metadata: {} })).display_name).toBe("calculator v2");
    expect((await sdk.beta.vaults.credentials.update(credentialId, { vault_id: vaultId, display_name: null })).display_name).toBeNull();
    expect((await sdk.beta.vaults.credentials.retrieve(credentialId, { vault_id: vaultId })).display_name).toBeNull();
  });

  it("gives a session's MCP tool calls the vault's token, and no secret shows anywhere", async () => {
    const agent = await sdk.beta.agents.create({
      name: "calculator",
      model: "claude-sonnet-5-5",
      mcp_servers: [{ type: "url", name: "calc", url: mcp.url }],
      tools: [{ type: "mcp_toolset", mcp_server_name: "calc", configs: [{ name: "add", enabled: true, permission_policy: { type: "always_allow" } }] }],
    });
    const environmentId = (await sdk.beta.environments.create({ name: "mcp" })).id;
    presented.length = 0;
    const calls = mcp.calls;
    const session = await sdk.beta.sessions.create({
      agent: agent.id,
      environment_id: environmentId,
      vault_ids: [vaultId],
      initial_events: [{ type: "user.message", content: [{ type: "text", text: "[scenario:mcp-add] add 19 and 23" }] }],
    });
    expect(session.vault_ids).toEqual([vaultId]);
    const events = await untilTurnEnds(session.id);
    expect(events.filter((e) => e.type === "session.error")).toEqual([]);
    const use = events.find((e) => e.type === "agent.mcp_tool_use");
    const result = events.find((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsAgentMCPToolResultEvent => e.type === "agent.mcp_tool_result");
    expect(use).toMatchObject({ name: "add", mcp_server_name: "calc", input: { a: 19, b: 23 } });
    expect(result).toMatchObject({ mcp_tool_use_id: use!.id, is_error: false, content: [{ type: "text", text: "42" }] });
    const answer = events.filter((e) => e.type === "agent.message").pop();
    expect(answer).toMatchObject({ content: [{ type: "text", text: "the server says 42 (error: false)" }] });
    expect(mcp.calls).toBe(calls + 1);
    // The server was shown the vault's current access token, and nothing else.
    const current = oauth.issued[oauth.issued.length - 2]!;
    expect(new Set(presented)).toEqual(new Set([current]));

    const everything = [JSON.stringify(events), ...responses, ...logs.lines].join("\n");
    expect(responses.length).toBeGreaterThan(10);
    expect(logs.lines.some((l) => l.includes('"service":"credential-vault-proxy"'))).toBe(true);
    // The scan reads what names the credential: its id is in the logs of both services.
    expect(logs.lines.filter((l) => l.includes(credentialId)).map((l) => (JSON.parse(l) as { service: string }).service)).toEqual(
      expect.arrayContaining(["gateway", "credential-vault-proxy"]),
    );
    for (const secret of secrets()) expect(everything.includes(secret), `a secret leaked`).toBe(false);
  });
});

describe("a static bearer credential", () => {
  it("is probed as is, and a rejected one is reported with the server's answer scrubbed", async () => {
    const vaultId = (await sdk.beta.vaults.create({ display_name: "Bob" })).id;
    const created = await sdk.beta.vaults.credentials.create(vaultId, { auth: { type: "static_bearer", mcp_server_url: mcp.url, token: STATIC_TOKEN } });
    expect(created.auth).toEqual({ type: "static_bearer", mcp_server_url: mcp.url });
    expect(created.display_name).toBeNull();
    const ok = await sdk.beta.vaults.credentials.mcpOAuthValidate(created.id, { vault_id: vaultId });
    expect(ok).toMatchObject({ status: "valid", has_refresh_token: false, mcp_probe: null, refresh: null });

    // Rotated to a token the server does not know: invalid, and the server's 401 body (which
    // quotes the Authorization header it got) comes back with the token scrubbed.
    await sdk.beta.vaults.credentials.update(created.id, { vault_id: vaultId, auth: { type: "static_bearer", token: STATIC_ROTATED } });
    const bad = await sdk.beta.vaults.credentials.mcpOAuthValidate(created.id, { vault_id: vaultId });
    expect(bad).toMatchObject({ status: "invalid", refresh: null, mcp_probe: { method: "initialize", http_response: { status_code: 401, body_truncated: false } } });
    expect(bad.mcp_probe?.http_response?.body).toContain("[redacted]");
    expect(JSON.stringify(bad)).not.toContain(STATIC_ROTATED);

    // Archived: the secret is erased; it is hidden from lists and can no longer change or be probed.
    const archived = await sdk.beta.vaults.credentials.archive(created.id, { vault_id: vaultId });
    expect(archived.archived_at).not.toBeNull();
    expect((await sdk.beta.vaults.credentials.list(vaultId)).data).toEqual([]);
    expect((await sdk.beta.vaults.credentials.list(vaultId, { include_archived: true })).data.map((c) => c.id)).toEqual([created.id]);
    const change = await failure(sdk.beta.vaults.credentials.update(created.id, { vault_id: vaultId, display_name: "x" }));
    expect(change.status).toBe(400);
    expect((await failure(sdk.beta.vaults.credentials.mcpOAuthValidate(created.id, { vault_id: vaultId }))).status).toBe(400);

    expect(await sdk.beta.vaults.credentials.delete(created.id, { vault_id: vaultId })).toEqual({ id: created.id, type: "vault_credential_deleted" });
    expect(await failure(sdk.beta.vaults.credentials.retrieve(created.id, { vault_id: vaultId }))).toBeInstanceOf(Anthropic.NotFoundError);
    for (const secret of [STATIC_TOKEN, STATIC_ROTATED]) expect(responses.join("\n")).not.toContain(secret);
  });
});
