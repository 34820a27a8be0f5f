/**
 * MCP end to end: the offline model calls an MCP tool, the harness sends it through the
 * credential vault proxy (agent.mcp_tool_use -> CallMcpTool -> agent.mcp_tool_result), the proxy
 * refreshes the session's expired token and calls the real MCP server, and the model reads the
 * answer. The harness only ever holds its own service token.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScenario } from "@metaharness/offline-model";
import { CredentialType, StopReasonType, ToolKind, type Event } from "@metaharness/proto";
import { idleReason, startBrain, startDoomedHarness, type Brain } from "../../support/harness.js";
import { textOf, userMessage } from "../../support/events.js";
import { eventually } from "../../support/eventually.js";
import { startMcpServer, type TestMcpServer } from "../../support/mcp-server.js";
import { startOAuthServer, type OAuthServer } from "../../support/oauth-server.js";
import { startTestLog, type TestLog } from "../../support/session-log.js";
import { metadataWithVaults, newVault, startTestVault, type TestVault } from "../../support/vault.js";

const scenarios = [
  defineScenario("mcp-slow", [
    { toolUses: [{ name: "slow", input: { ms: 2000, text: "filed once" } }] },
    (ctx) => ({ text: `the server says ${ctx.lastToolResult?.content ?? "?"} (error: ${String(ctx.lastToolResult?.isError)})` }),
  ]),
  defineScenario("mcp-add", [
    { toolUses: [{ name: "add", input: { a: 19, b: 23 } }] },
    (ctx) => ({ text: `the server says ${ctx.lastToolResult?.content ?? "?"} (error: ${String(ctx.lastToolResult?.isError)})` }),
  ]),
];

let brain: Brain;
let vault: TestVault;
let oauth: OAuthServer;
let mcp: TestMcpServer;
let log: TestLog;

beforeAll(async () => {
  // The proxy asks the session log about sessions, and the harness asks the proxy: the log starts
  // first (on port 0), so that both can be given its address.
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  vault = await startTestVault({ sessionLog: log.reach("proxy") });
  oauth = await startOAuthServer({ clientId: "mh", clientSecret: "s3cret-client", method: "client_secret_post" });
  mcp = await startMcpServer((t) => oauth.isValid(t));
  brain = await startBrain({
    scenarios,
    log,
    env: { MH_CREDENTIAL_PROXY_ADDR: vault.address, MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.harness },
  });
});
afterAll(async () => {
  await brain?.stop();
  await mcp?.close();
  await oauth?.close();
  await vault?.stop();
  await log?.stop();
});

/** A session whose vault holds an expired OAuth token for the test server, with its tools add and slow. */
async function mcpSession(): Promise<string> {
  const admin = vault.client("admin");
  const vaultId = await newVault(admin);
  const pair = oauth.issue(-60);
  await admin.putCredential({
    vaultId,
    credentialId: "",
    type: CredentialType.CREDENTIAL_TYPE_MCP_OAUTH,
    displayName: "calculator",
    config: {
      $case: "mcpOauth",
      value: { mcpServerUrl: mcp.url, expiresAt: pair.expiresAt, clientId: "mh", tokenEndpoint: oauth.url, tokenEndpointAuthMethod: "client_secret_post", scope: "" },
    },
    secret: { token: "", accessToken: pair.accessToken, refreshToken: pair.refreshToken, clientSecret: "s3cret-client" },
    metadata: {},
  });
  const mcpTool = (name: string, description: string, inputSchema: Record<string, unknown>) =>
    ({ name, kind: ToolKind.TOOL_KIND_MCP, description, inputSchema, permissionPolicy: 0, mcpServerUrl: mcp.url });
  const metadata = metadataWithVaults([vaultId], {
    tools: [
      mcpTool("add", "Adds two numbers.", { properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] }),
      mcpTool("slow", "Answers after a while.", { properties: { ms: { type: "number" }, text: { type: "string" } }, required: ["ms"] }),
    ],
  });
  const { session } = await brain.log.client.createSession({ sessionId: "", metadata });
  return session!.sessionId;
}

const ended = (e: Event[]): boolean => idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN;

describe("MCP tools in a session", () => {
  it("call the MCP server through the proxy, refreshing the expired token", async () => {
    const sessionId = await mcpSession();
    await brain.log.client.emitEvent({ sessionId, event: userMessage("[scenario:mcp-add] add them") });
    await brain.rpc.wake({ sessionId });
    const events = await brain.waitFor(sessionId, (e) => ended(e) || e.some((x) => x.type === "session.error"));
    const error = events.find((e) => e.type === "session.error");
    expect(error === undefined ? "" : JSON.stringify(error.payload)).toBe("");

    const use = events.find((e) => e.type === "agent.mcp_tool_use");
    const result = events.find((e) => e.type === "agent.mcp_tool_result");
    expect(use).toBeDefined();
    expect(result?.payload?.$case === "agentMcpToolResult" && result.payload.value).toMatchObject({ mcpToolUseId: use!.id, isError: false });
    expect(textOf(events.filter((e) => e.type === "agent.message").pop())).toBe("the server says 42 (error: false)");
    expect(oauth.refreshes).toBe(1);
    expect(mcp.calls).toBe(1);
    const all = JSON.stringify(events);
    for (const secret of oauth.issued) expect(all).not.toContain(secret);
  });

  it("a harness killed while its MCP call runs: the next one gets that call's answer, and the server sees one call", async () => {
    const doomed = await startDoomedHarness(brain, { MH_CREDENTIAL_PROXY_ADDR: vault.address, MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.harness });
    const callsBefore = mcp.calls;
    let sessionId = "";
    try {
      sessionId = await doomed.own(mcpSession, "[scenario:mcp-slow] file it");
      // The call reached the MCP server (which answers after 2 s): the harness dies mid-call.
      await eventually(() => Promise.resolve(mcp.calls !== callsBefore ? true : undefined), "the MCP call to reach the server");
      expect(mcp.calls).toBe(callsBefore + 1);
      await doomed.kill("SIGKILL");
    } catch (err) {
      await doomed.kill();
      throw new Error(`${String(err)}\n--- doomed output ---\n${doomed.output()}`);
    }
    const events = await brain.waitFor(sessionId, (e) => ended(e) || e.some((x) => x.type === "session.error"), 45_000);
    const results = events.filter((e) => e.type === "agent.mcp_tool_result");
    expect(results).toHaveLength(1);
    expect(results[0]?.payload?.$case === "agentMcpToolResult" && results[0].payload.value.isError).toBe(false);
    expect(textOf(events.filter((e) => e.type === "agent.message").pop())).toBe("the server says filed once (error: false)");
    expect(mcp.calls).toBe(callsBefore + 1);
  }, 90_000);
});
