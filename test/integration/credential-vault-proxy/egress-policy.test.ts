/**
 * A proxy deployed without MH_CREDENTIAL_PROXY_ALLOW_PRIVATE_NETWORKS (the default) refuses to
 * connect to private addresses on a tenant's behalf: validation, MCP calls and git requests
 * towards 127.0.0.1, or towards a name resolving to it (localhost), fail with an error naming
 * the host and the setting, and the servers there see nothing. (With the setting, every other
 * test of the proxy reaches its servers on 127.0.0.1.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVICE_AUTH_HEADER } from "@metaharness/service-kit/auth";
import { CredentialType } from "@metaharness/proto";
import { startMcpServer, type TestMcpServer } from "../../support/mcp-server.js";
import { rejection } from "../../support/sandbox-broker.js";
import { startTestLog, type TestLog } from "../../support/session-log.js";
import { metadataWithVaults, newVault, putGitToken, startTestVault, type TestVault } from "../../support/vault.js";

const TOKEN = "mcp_bearer_policy_test_5e4d3c2b1a";
const SETTING = "MH_CREDENTIAL_PROXY_ALLOW_PRIVATE_NETWORKS=true";

let log: TestLog;
let vault: TestVault;
let mcp: TestMcpServer;
let calls = 0;

beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  vault = await startTestVault({ sessionLog: log.reach("proxy"), env: { MH_CREDENTIAL_PROXY_ALLOW_PRIVATE_NETWORKS: "false" } });
  mcp = await startMcpServer(() => {
    calls += 1;
    return true;
  });
});
afterAll(async () => {
  await mcp?.close();
  await vault?.stop();
  await log?.stop();
});

/** The test server's URL with its host replaced: 127.0.0.1 as is, or `localhost`. */
const via = (host: string): string => mcp.url.replace("127.0.0.1", host);

async function sessionWith(serverUrl: string): Promise<{ sessionId: string; vaultId: string; credentialId: string }> {
  const admin = vault.client("admin");
  const vaultId = await newVault(admin);
  const { credential } = await admin.putCredential({
    vaultId,
    credentialId: "",
    type: CredentialType.CREDENTIAL_TYPE_MCP_BEARER,
    displayName: "private mcp",
    config: { $case: "mcpBearer", value: { mcpServerUrl: serverUrl } },
    secret: { token: TOKEN, accessToken: "", refreshToken: "", clientSecret: "" },
    metadata: {},
  });
  const { session } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([vaultId]) });
  return { sessionId: session!.sessionId, vaultId, credentialId: credential!.credentialId };
}

function expectRefused(err: { code: string; message: string }, host: string): void {
  expect(err.message).toContain(`${host} is on a private network`);
  expect(err.message).toContain(SETTING);
  expect(err.message).not.toContain(TOKEN);
}

describe("egress policy without private networks", () => {
  it.each(["127.0.0.1", "localhost"])("refuses validation and MCP calls towards %s", async (host) => {
    expect(vault.config.allowPrivateNetworks).toBe(false);
    const { sessionId, vaultId, credentialId } = await sessionWith(via(host));
    const before = calls;
    const validation = await rejection(vault.client("admin").validateMcpCredential({ vaultId, credentialId }));
    expect(validation.code).toBe("PERMISSION_DENIED");
    expectRefused(validation, host);
    const call = await rejection(vault.client("harness").callMcpTool({ sessionId, mcpServerUrl: via(host), name: "add", arguments: { a: 1, b: 2 }, callId: "toolu_1" }));
    expect(call.code).toBe("PERMISSION_DENIED");
    expectRefused(call, host);
    const list = await rejection(vault.client("harness").listMcpTools({ sessionId, mcpServerUrl: via(host) }));
    expectRefused(list, host);
    expect(calls).toBe(before);
  });

  it("refuses a token endpoint on localhost before refreshing through it", async () => {
    const admin = vault.client("admin");
    const vaultId = await newVault(admin);
    const serverUrl = "https://mcp.invalid/mcp";
    await admin.putCredential({
      vaultId,
      credentialId: "",
      type: CredentialType.CREDENTIAL_TYPE_MCP_OAUTH,
      displayName: "private token endpoint",
      config: {
        $case: "mcpOauth",
        value: {
          mcpServerUrl: serverUrl,
          expiresAt: new Date(Date.now() - 60_000),
          clientId: "mh-client",
          tokenEndpoint: via("localhost").replace(/\/mcp$/, "/token"),
          tokenEndpointAuthMethod: "client_secret_post",
          scope: "",
        },
      },
      secret: { token: "", accessToken: TOKEN, refreshToken: "refresh_policy_test_9f8e7d", clientSecret: "client-secret-policy" },
      metadata: {},
    });
    const { session } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([vaultId]) });
    const call = await rejection(vault.client("harness").callMcpTool({ sessionId: session!.sessionId, mcpServerUrl: serverUrl, name: "add", arguments: {}, callId: "toolu_2" }));
    expect(call.code).toBe("PERMISSION_DENIED");
    expectRefused(call, "localhost");
  });

  it.each(["127.0.0.1", "localhost"])("refuses git requests towards %s with a 403 naming the host", async (host) => {
    const repoUrl = `${via(host).replace(/\/mcp$/, "")}/org/app.git`;
    const admin = vault.client("admin");
    const vaultId = await newVault(admin);
    await putGitToken(admin, vaultId, repoUrl, "ghs_policy_test_token_1234");
    const { session } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([vaultId]) });
    const { remotes } = await vault.client("broker").openGitRemote({ sessionId: session!.sessionId, sandboxId: "sbx_policy", repositoryUrls: [repoUrl], ttlSeconds: 0 });
    const remote = remotes[repoUrl];
    expect(remote).toBeDefined();
    const res = await fetch(`${remote}/info/refs?service=git-upload-pack`, { headers: { [SERVICE_AUTH_HEADER]: `Bearer ${vault.tokens.broker}` } });
    expect(res.status).toBe(403);
    const body = await res.text();
    expect(body).toContain(`${host} is on a private network`);
    expect(body).toContain(SETTING);
  });
});
