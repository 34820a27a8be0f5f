/**
 * MCP through the proxy against a real MCP server (Streamable HTTP, bearer tokens) and a real
 * OAuth token endpoint: calls carry the session's token, an expired token is refreshed once, N
 * concurrent calls (in one instance, and across two) cause one refresh, a token the server
 * revoked is refreshed on the 401, a server echoing the token gets it scrubbed, and a session
 * can only use the vaults it names, of its own tenant. A call is made upstream at most once per
 * session and call_id, across instances and callers that go away (the call ledger).
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CredentialType } from "@metaharness/proto";
import { eventually } from "../../support/eventually.js";
import { startMcpServer, type TestMcpServer } from "../../support/mcp-server.js";
import { startOAuthServer, type OAuthServer } from "../../support/oauth-server.js";
import { rejection } from "../../support/sandbox-broker.js";
import { startTestLog, type TestLog } from "../../support/session-log.js";
import { newVault, startTestVault, type TestVault, type VaultClient } from "../../support/vault.js";

let log: TestLog;
let vault: TestVault;
let oauth: OAuthServer;
let mcp: TestMcpServer;
let admin: VaultClient;
let harness: VaultClient;

beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  vault = await startTestVault({ sessionLog: log.reach("proxy") });
  oauth = await startOAuthServer({ clientId: "mh-client", clientSecret: "client-secret-xyz-123", method: "client_secret_basic", delayMs: 150 });
  mcp = await startMcpServer((t) => oauth.isValid(t));
  admin = vault.client("admin");
  harness = vault.client("harness");
});
afterAll(async () => {
  await mcp?.close();
  await oauth?.close();
  await vault?.stop();
  await log?.stop();
});

/** One statement on the proxy's database, as an operator (or a crash) would leave it. */
async function sql(text: string, values: unknown[]): Promise<Array<Record<string, unknown>>> {
  const c = new pg.Client({ connectionString: vault.db.url });
  await c.connect();
  try {
    return (await c.query<Record<string, unknown>>(text, values)).rows;
  } finally {
    await c.end();
  }
}

/** A session whose one vault holds an mcp_oauth credential for the test server; `expired` backdates it. */
async function sessionWithToken(
  expired: boolean,
  tenant = "",
): Promise<{ sessionId: string; vaultId: string; credentialId: string; accessToken: string }> {
  const vaultId = await newVault(admin, "test", tenant);
  const pair = oauth.issue(expired ? -10 : 3600);
  const { credential } = await admin.putCredential({
    vaultId,
    credentialId: "",
    type: CredentialType.CREDENTIAL_TYPE_MCP_OAUTH,
    displayName: "test mcp",
    config: {
      $case: "mcpOauth",
      value: {
        mcpServerUrl: mcp.url,
        expiresAt: pair.expiresAt,
        clientId: "mh-client",
        tokenEndpoint: oauth.url,
        tokenEndpointAuthMethod: "client_secret_basic",
        scope: "",
      },
    },
    secret: { token: "", accessToken: pair.accessToken, refreshToken: pair.refreshToken, clientSecret: "client-secret-xyz-123" },
    metadata: {},
  });
  const sessionId = await createSession([vaultId], tenant);
  return { sessionId, vaultId, credentialId: credential!.credentialId, accessToken: pair.accessToken };
}

async function createSession(vaultIds: string[], tenant = ""): Promise<string> {
  const { session } = await log.client.createSession({
    sessionId: "",
    metadata: { workspaceFork: undefined, agentId: "", agentVersion: 0, tenant, labels: {}, harness: "", environmentId: "", vaultIds, title: "", agent: undefined, environment: undefined, repositories: [] },
  });
  return session!.sessionId;
}

const add = (sessionId: string, a: number, b: number, client: VaultClient = harness) =>
  client.callMcpTool({ sessionId, mcpServerUrl: mcp.url, name: "add", arguments: { a, b }, callId: `toolu_${a}_${b}` });

describe("MCP through the proxy", () => {
  it("lists and calls the server's tools with the session's token", async () => {
    const { sessionId } = await sessionWithToken(false);
    const before = oauth.refreshes;
    const { tools } = await harness.listMcpTools({ sessionId, mcpServerUrl: mcp.url });
    expect(tools.map((t) => t.name)).toEqual(["add", "echo", "leak_auth", "slow"]);
    expect(tools[0]?.inputSchema?.["required"]).toEqual(["a", "b"]);
    expect(await add(sessionId, 2, 3)).toEqual({ text: ["5"], isError: false, replayed: false });
    expect(oauth.refreshes).toBe(before);
  });

  it("refreshes an expired token once, then uses the new one", async () => {
    const { sessionId } = await sessionWithToken(true);
    const before = oauth.refreshes;
    expect((await add(sessionId, 1, 1)).text).toEqual(["2"]);
    expect(oauth.refreshes).toBe(before + 1);
    expect((await add(sessionId, 2, 2)).text).toEqual(["4"]);
    expect(oauth.refreshes).toBe(before + 1);
  });

  it("refreshes once for many concurrent calls, within one instance and across two", async () => {
    const { sessionId } = await sessionWithToken(true);
    const before = oauth.refreshes;
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => add(sessionId, i, 1)));
    expect(results.map((r) => r.text[0])).toEqual(Array.from({ length: 10 }, (_, i) => String(i + 1)));
    expect(oauth.refreshes).toBe(before + 1);

    const second = await sessionWithToken(true);
    const replica = await vault.startReplica();
    const other = replica.client("harness");
    const mid = oauth.refreshes;
    const both = await Promise.all(Array.from({ length: 12 }, (_, i) => add(second.sessionId, i, 2, i % 2 === 0 ? harness : other)));
    expect(both.every((r) => !r.isError)).toBe(true);
    expect(oauth.refreshes).toBe(mid + 1);
    expect(oauth.refusals).toBe(0);
  });

  it("refreshes a token the server revoked before its expiry, on the 401", async () => {
    const { sessionId } = await sessionWithToken(false);
    oauth.revokeAll();
    const before = oauth.refreshes;
    expect((await add(sessionId, 20, 22)).text).toEqual(["42"]);
    expect(oauth.refreshes).toBe(before + 1);
  });

  it("scrubs the token from what a hostile server sends back", async () => {
    const { sessionId, accessToken } = await sessionWithToken(false);
    const res = await harness.callMcpTool({ sessionId, mcpServerUrl: mcp.url, name: "leak_auth", arguments: {}, callId: "toolu_leak" });
    expect(res.text[0]).toBe("I saw: Bearer [redacted]");
    expect(JSON.stringify(res)).not.toContain(accessToken);
  });

  it("answers a tool error as a result, and unknown servers and sessions as errors", async () => {
    const { sessionId } = await sessionWithToken(false);
    const unknown = await harness.callMcpTool({ sessionId, mcpServerUrl: mcp.url, name: "nope", arguments: {}, callId: "toolu_nope" });
    expect(unknown.isError).toBe(true);
    const other = await rejection(harness.callMcpTool({ sessionId, mcpServerUrl: "http://127.0.0.1:1/mcp", name: "add", arguments: {}, callId: "toolu_other" }));
    expect(other.code).toBe("FAILED_PRECONDITION");
    expect((await rejection(add("sesn_doesnotexist", 1, 2))).code).toBe("NOT_FOUND");
  });

  it("uses only the vaults the session names", async () => {
    const { vaultId } = await sessionWithToken(false);
    const stranger = await createSession([await newVault(admin)]);
    expect((await rejection(add(stranger, 1, 2))).code).toBe("FAILED_PRECONDITION");
    const named = await createSession([vaultId]);
    expect((await add(named, 1, 2)).text).toEqual(["3"]);
  });

  it("uses only vaults of the session's own tenant, no tenant being a tenant of its own", async () => {
    const theirs = await sessionWithToken(false, "tenant-a");
    expect((await add(theirs.sessionId, 1, 2)).text).toEqual(["3"]);
    const untenanted = await sessionWithToken(false);
    // A session made straight over gRPC, without a tenant, naming a tenant's vault; and a
    // tenant's session naming an untenanted vault, or another tenant's.
    for (const [tenant, vaultId] of [["", theirs.vaultId], ["tenant-a", untenanted.vaultId], ["tenant-b", theirs.vaultId]] as const) {
      const named = await createSession([vaultId], tenant);
      expect([tenant, (await rejection(add(named, 1, 2))).code]).toEqual([tenant, "FAILED_PRECONDITION"]);
    }
  });

  it("keeps working after a master key rotation", async () => {
    const { sessionId } = await sessionWithToken(false);
    const newKey = await vault.newKeyFile("mcp-master-2.key");
    vault = await vault.restart({ MH_MASTER_KEY_FILE: newKey, MH_PREVIOUS_MASTER_KEY_FILES: vault.masterKeyFile });
    admin = vault.client("admin");
    harness = vault.client("harness");
    expect((await admin.rotateMasterKey({})).rewrapped).toBeGreaterThan(0);
    vault = await vault.restart({ MH_MASTER_KEY_FILE: newKey, MH_PREVIOUS_MASTER_KEY_FILES: "" });
    harness = vault.client("harness");
    admin = vault.client("admin");
    expect((await add(sessionId, 5, 6)).text).toEqual(["11"]);
  });
});

describe("the call ledger: at most one call upstream per session and call_id", () => {
  const slow = (sessionId: string, callId: string, ms: number, text: string, client: VaultClient = harness, signal?: AbortSignal) =>
    client.callMcpTool({ sessionId, mcpServerUrl: mcp.url, name: "slow", arguments: { ms, text }, callId }, signal === undefined ? {} : { signal });

  it("answers a repeat from the ledger, and another session's same call_id on its own", async () => {
    const { sessionId } = await sessionWithToken(false);
    const before = mcp.calls;
    expect(await add(sessionId, 4, 5)).toEqual({ text: ["9"], isError: false, replayed: false });
    expect(await add(sessionId, 4, 5)).toEqual({ text: ["9"], isError: false, replayed: true });
    expect(mcp.calls).toBe(before + 1);
    const other = await sessionWithToken(false);
    expect(await add(other.sessionId, 4, 5)).toMatchObject({ replayed: false });
    expect(mcp.calls).toBe(before + 2);
  });

  it("makes concurrent repeats wait for the one call, in one instance and across two", async () => {
    const { sessionId } = await sessionWithToken(false);
    const replica = await vault.startReplica();
    const before = mcp.calls;
    const answers = await Promise.all([
      slow(sessionId, "toolu_once", 600, "one"),
      slow(sessionId, "toolu_once", 600, "one"),
      slow(sessionId, "toolu_once", 600, "one", replica.client("harness")),
    ]);
    expect(answers.map((a) => a.text)).toEqual([["one"], ["one"], ["one"]]);
    expect(answers.filter((a) => !a.replayed)).toHaveLength(1);
    expect(mcp.calls).toBe(before + 1);
  });

  it("refuses a call_id reused for another tool while its call is still under way", async () => {
    const { sessionId } = await sessionWithToken(false);
    const before = mcp.calls;
    const first = slow(sessionId, "toolu_busy", 600, "one");
    await eventually(() => Promise.resolve(mcp.calls > before ? true : undefined), "the first call to reach the MCP server");
    const reused = await rejection(harness.callMcpTool({ sessionId, mcpServerUrl: mcp.url, name: "echo", arguments: { text: "x" }, callId: "toolu_busy" }));
    expect(reused).toMatchObject({ code: "FAILED_PRECONDITION", field: "call_id" });
    expect((await first).text).toEqual(["one"]);
  });

  it("sees a call through when its caller goes away, so the harness that takes over gets its answer", async () => {
    const { sessionId } = await sessionWithToken(false);
    const before = mcp.calls;
    const gone = new AbortController();
    const first = slow(sessionId, "toolu_orphan", 800, "finished anyway", harness, gone.signal);
    await eventually(() => Promise.resolve(mcp.calls > before ? true : undefined), "the call to reach the MCP server");
    gone.abort(); // the harness died mid-call
    expect((await rejection(first)).code).toBe("CANCELLED");
    expect(await slow(sessionId, "toolu_orphan", 800, "finished anyway")).toEqual({ text: ["finished anyway"], isError: false, replayed: true });
    expect(mcp.calls).toBe(before + 1);
  });

  it("settles a call whose proxy died as unknown, an error result, never a second call", async () => {
    const { sessionId } = await sessionWithToken(false);
    // What a proxy killed mid-call leaves: a claim that never finished, its heartbeat long stopped.
    await sql(
      `INSERT INTO mcp_calls (session_id, call_id, server_url, name, status, owner, started_at, heartbeat_at)
       VALUES ($1, 'toolu_dead', $2, 'add', 'running', 'a-dead-proxy', now() - interval '1 minute', now() - interval '1 minute')`,
      [sessionId, mcp.url],
    );
    const before = mcp.calls;
    const answer = await harness.callMcpTool({ sessionId, mcpServerUrl: mcp.url, name: "add", arguments: { a: 1, b: 1 }, callId: "toolu_dead" });
    expect(answer).toMatchObject({ isError: true, replayed: true });
    expect(answer.text[0]).toMatch(/outcome of this MCP call is unknown/);
    expect(mcp.calls).toBe(before);
  });

  it("forgets a call refused before it was sent, and refuses a call_id reused for another tool", async () => {
    const { vaultId } = await sessionWithToken(false);
    const stranger = await createSession([await newVault(admin)]);
    expect((await rejection(add(stranger, 7, 7))).code).toBe("FAILED_PRECONDITION");
    expect(await sql("SELECT 1 FROM mcp_calls WHERE session_id = $1", [stranger])).toEqual([]);

    const named = await createSession([vaultId]);
    expect((await add(named, 7, 7)).text).toEqual(["14"]);
    const reused = await rejection(harness.callMcpTool({ sessionId: named, mcpServerUrl: mcp.url, name: "echo", arguments: { text: "x" }, callId: "toolu_7_7" }));
    expect(reused).toMatchObject({ code: "FAILED_PRECONDITION", field: "call_id" });
    const missing = await rejection(harness.callMcpTool({ sessionId: named, mcpServerUrl: mcp.url, name: "add", arguments: {}, callId: "" }));
    expect(missing).toMatchObject({ code: "INVALID_ARGUMENT", field: "call_id" });
  });
});
