/**
 * The vault on real Postgres: CRUD of vaults and credentials, secrets that never come back (not in
 * any response, not in clear in any row), per-service authentication and least privilege, and a
 * master-key rotation after which the old key file can go and everything still decrypts.
 */
import { execFileSync } from "node:child_process";
import { rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import { CredentialType, ListCredentialsResponse, PutCredentialResponse } from "@metaharness/proto";
import { startTestLog, type TestLog } from "../../support/session-log.js";
import { rejection } from "../../support/sandbox-broker.js";
import { metadataWithVaults, newVault, putGitToken, startTestVault, type TestVault, type VaultClient } from "../../support/vault.js";

const GIT_SECRET = "ghp_vaulttest_7f3a9c2e1b5d4a6f8e0c";
const MCP_ACCESS = "mcp_access_vaulttest_55aa77cc";
const MCP_REFRESH = "mcp_refresh_vaulttest_99bb33dd";
const BEARER = "bearer_vaulttest_0123456789abcdef";

let log: TestLog;
let vault: TestVault;
let admin: VaultClient;

beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  vault = await startTestVault({ sessionLog: log.reach("proxy") });
  admin = vault.client("admin");
});
afterAll(async () => {
  await vault?.stop();
  await log?.stop();
});

async function tableText(): Promise<string> {
  const c = new pg.Client({ connectionString: vault.db.url });
  await c.connect();
  try {
    const { rows } = await c.query<{ t: string }>("SELECT row_to_json(c)::text AS t FROM credentials c");
    const raw = await c.query<{ b: Buffer }>("SELECT secret_ciphertext || wrapped_key AS b FROM credentials");
    return rows.map((r) => r.t).join("\n") + raw.rows.map((r) => r.b.toString("latin1")).join("");
  } finally {
    await c.end();
  }
}

async function masterKeyIds(): Promise<string[]> {
  const c = new pg.Client({ connectionString: vault.db.url });
  await c.connect();
  try {
    return (await c.query<{ id: string }>("SELECT DISTINCT master_key_id AS id FROM credentials")).rows.map((r) => r.id);
  } finally {
    await c.end();
  }
}

async function putAll(vaultId: string): Promise<string[]> {
  const git = await putGitToken(admin, vaultId, "https://git.example.com/org", GIT_SECRET);
  const mcp = await admin.putCredential({
    vaultId,
    credentialId: "",
    type: CredentialType.CREDENTIAL_TYPE_MCP_OAUTH,
    displayName: "mcp",
    config: {
      $case: "mcpOauth",
      value: {
        mcpServerUrl: "https://mcp.example.com/mcp/",
        expiresAt: new Date(Date.now() + 3600_000),
        clientId: "client-1",
        tokenEndpoint: "https://auth.example.com/token",
        tokenEndpointAuthMethod: "none",
        scope: "",
      },
    },
    secret: { token: "", accessToken: MCP_ACCESS, refreshToken: MCP_REFRESH, clientSecret: "" },
    metadata: {},
  });
  const bearer = await admin.putCredential({
    vaultId,
    credentialId: "",
    type: CredentialType.CREDENTIAL_TYPE_HTTP_BEARER,
    displayName: "api",
    config: { $case: "httpBearer", value: { host: "API.example.com", headerName: "" } },
    secret: { token: BEARER, accessToken: "", refreshToken: "", clientSecret: "" },
    metadata: {},
  });
  expect(Buffer.from(PutCredentialResponse.encode(mcp).finish()).includes(MCP_ACCESS)).toBe(false);
  return [git.credentialId, mcp.credential!.credentialId, bearer.credential!.credentialId];
}

describe("vaults and credentials", () => {
  it("store credentials whose secrets never come back and are not in clear at rest", async () => {
    const vaultId = await newVault(admin);
    expect((await admin.getVault({ vaultId })).vault?.displayName).toBe("test");
    await putAll(vaultId);
    const listed = await admin.listCredentials({ vaultId, pageSize: 0, pageToken: "", includeArchived: false });
    expect(listed.credentials).toHaveLength(3);
    const mcp = listed.credentials.find((c) => c.type === CredentialType.CREDENTIAL_TYPE_MCP_OAUTH)!;
    expect(mcp.config?.$case === "mcpOauth" && mcp.config.value.mcpServerUrl).toBe("https://mcp.example.com/mcp");
    const bearer = listed.credentials.find((c) => c.type === CredentialType.CREDENTIAL_TYPE_HTTP_BEARER)!;
    expect(bearer.config?.$case === "httpBearer" && bearer.config.value).toEqual({ host: "api.example.com", headerName: "Authorization" });
    const bytes = Buffer.from(ListCredentialsResponse.encode(listed).finish());
    for (const s of [GIT_SECRET, MCP_ACCESS, MCP_REFRESH, BEARER]) {
      expect(bytes.includes(Buffer.from(s))).toBe(false);
      expect((await tableText()).includes(s)).toBe(false);
    }
  });

  it("validate what goes in", async () => {
    const vaultId = await newVault(admin);
    const missing = await rejection(putGitToken(admin, vaultId, "https://git.example.com/x", ""));
    expect(missing).toMatchObject({ code: "INVALID_ARGUMENT", field: "secret.token" });
    const nul = await rejection(putGitToken(admin, vaultId, "https://git.example.com/x", "t", "user\u0000"));
    expect(nul).toMatchObject({ code: "INVALID_ARGUMENT", field: "git_token.username" });
    const userinfo = await rejection(putGitToken(admin, vaultId, "https://user:pw@git.example.com/x", "t"));
    expect(userinfo.code).toBe("INVALID_ARGUMENT");
    expect(userinfo.message).not.toContain("pw");
    expect((await rejection(admin.getVault({ vaultId: "vlt_000000000000000000000000" }))).code).toBe("NOT_FOUND");
  });

  it("page through vaults and delete them with their credentials", async () => {
    const { vault: v } = await admin.createVault({ tenant: "tenant-page", displayName: "a", metadata: { k: "v" }, sessionId: "" });
    await admin.createVault({ tenant: "tenant-page", displayName: "b", metadata: {}, sessionId: "" });
    const first = await admin.listVaults({ tenant: "tenant-page", pageSize: 1, pageToken: "", includeArchived: false });
    expect(first.vaults.map((x) => x.displayName)).toEqual(["a"]);
    const second = await admin.listVaults({ tenant: "tenant-page", pageSize: 1, pageToken: first.nextPageToken, includeArchived: false });
    // A NUL cannot be stored: INVALID_ARGUMENT naming the field, where Postgres's refusal was
    // answered INTERNAL, and later named no field.
    const nul = [
      admin.createVault({ tenant: "tenant-page", displayName: "a\u0000b", metadata: {}, sessionId: "" }),
      admin.createVault({ tenant: "tenant-page", displayName: "a", metadata: { k: "\u0000" }, sessionId: "" }),
      admin.listVaults({ tenant: "tenant-\u0000", pageSize: 1, pageToken: "", includeArchived: false }),
      admin.updateVault({ vaultId: v!.vaultId, displayName: undefined, metadata: { upsert: { "k\u0000": "v" }, remove: [] } }),
    ];
    const fields = ["display_name", "metadata[k]", "tenant", "metadata.upsert[k\\0]"];
    for (const [i, call] of nul.entries()) expect(await rejection(call), fields[i]).toMatchObject({ code: "INVALID_ARGUMENT", field: fields[i] });
    for (const pageToken of ["garbage", "9999999999999999999"]) {
      expect(await rejection(admin.listVaults({ tenant: "tenant-page", pageSize: 1, pageToken, includeArchived: false }))).toMatchObject({
        code: "INVALID_ARGUMENT",
        field: "page_token",
      });
    }
    expect(second.vaults.map((x) => x.displayName)).toEqual(["b"]);
    await putGitToken(admin, v!.vaultId, "https://git.example.com/y", "tok-y");
    await admin.deleteVault({ vaultId: v!.vaultId });
    expect((await rejection(admin.listCredentials({ vaultId: v!.vaultId, pageSize: 0, pageToken: "", includeArchived: false }))).code).toBe("NOT_FOUND");
  });
});

describe("service authentication", () => {
  it("refuses callers without a known token", async () => {
    expect((await rejection(vault.client("none").listVaults({ tenant: "", pageSize: 0, pageToken: "", includeArchived: false }))).code).toBe("UNAUTHENTICATED");
    const forged = vault.client({ token: "mhsvc_forged_forged_forged_forged_forged" });
    expect((await rejection(forged.listVaults({ tenant: "", pageSize: 0, pageToken: "", includeArchived: false }))).code).toBe("UNAUTHENTICATED");
  });

  it("gives each service only what it needs", async () => {
    const harness = vault.client("harness");
    const broker = vault.client("broker");
    const vaultId = await newVault(admin);
    const denied = async (p: Promise<unknown>): Promise<string> => (await rejection(p)).code;
    expect(await denied(harness.createVault({ tenant: "", displayName: "", metadata: {}, sessionId: "" }))).toBe("PERMISSION_DENIED");
    expect(await denied(harness.listCredentials({ vaultId, pageSize: 0, pageToken: "", includeArchived: false }))).toBe("PERMISSION_DENIED");
    expect(await denied(broker.listCredentials({ vaultId, pageSize: 0, pageToken: "", includeArchived: false }))).toBe("PERMISSION_DENIED");
    expect(await denied(harness.openGitRemote({ sessionId: "sesn_x", sandboxId: "s", repositoryUrls: ["https://h/r"], ttlSeconds: 0 }))).toBe(
      "PERMISSION_DENIED",
    );
    expect(await denied(broker.callMcpTool({ sessionId: "sesn_x", mcpServerUrl: "https://h", name: "t", arguments: {}, callId: "" }))).toBe(
      "PERMISSION_DENIED",
    );
    expect(await denied(admin.callMcpTool({ sessionId: "sesn_x", mcpServerUrl: "https://h", name: "t", arguments: {}, callId: "" }))).toBe(
      "PERMISSION_DENIED",
    );
    expect(await denied(harness.rotateMasterKey({}))).toBe("PERMISSION_DENIED");
  });
});

describe("a terminated session", () => {
  it("gets no git remote, egress or MCP credential, naming session_id", async () => {
    const vaultId = await newVault(admin);
    await putAll(vaultId);
    const { session } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([vaultId]) });
    const sessionId = session!.sessionId;
    await log.client.emitEvent({ sessionId, event: newEvent("session.status_terminated", {}) });
    const broker = vault.client("broker");
    const refusals = [
      await rejection(broker.openGitRemote({ sessionId, sandboxId: "sbx_ended", repositoryUrls: ["https://git.example.com/org/r"], ttlSeconds: 0 })),
      await rejection(broker.openEgress({ sessionId, sandboxId: "sbx_ended", allowedHosts: ["api.example.com"], ttlSeconds: 0, allowPackageManagers: false, unrestricted: false })),
      await rejection(
        vault.client("harness").callMcpTool({ sessionId, mcpServerUrl: "https://mcp.example.com/mcp/", name: "t", arguments: {}, callId: "evt_ended" }),
      ),
    ];
    for (const err of refusals) {
      expect(err).toMatchObject({ code: "FAILED_PRECONDITION", field: "session_id" });
      expect(err.message).toContain("terminated");
    }
  });
});

describe("master key rotation", () => {
  it("re-wraps every data key; the old key file can then be removed", async () => {
    const vaultId = await newVault(admin);
    const ids = await putAll(vaultId);
    const oldKey = vault.masterKeyFile;
    const oldIds = await masterKeyIds();
    expect(oldIds).toHaveLength(1);

    const newKey = await vault.newKeyFile("master-2.key");
    // Only the new key: the existing credentials cannot be opened (a replace needs the old secret).
    vault = await vault.restart({ MH_MASTER_KEY_FILE: newKey });
    admin = vault.client("admin");
    const blind = await rejection(replaceKeepingSecret(vaultId, ids[0]!));
    expect(blind.code).toBe("FAILED_PRECONDITION");

    vault = await vault.restart({ MH_MASTER_KEY_FILE: newKey, MH_PREVIOUS_MASTER_KEY_FILES: oldKey });
    admin = vault.client("admin");
    const rotated = await admin.rotateMasterKey({});
    expect(rotated.rewrapped).toBeGreaterThanOrEqual(3);
    expect(await masterKeyIds()).toEqual([rotated.activeKeyId]);
    expect(rotated.activeKeyId).not.toBe(oldIds[0]);
    expect((await admin.rotateMasterKey({})).rewrapped).toBe(0);

    await rm(oldKey);
    vault = await vault.restart({ MH_MASTER_KEY_FILE: newKey, MH_PREVIOUS_MASTER_KEY_FILES: "" });
    admin = vault.client("admin");
    // Replacing a credential while keeping its secret opens the sealed secret: it decrypts.
    await replaceKeepingSecret(vaultId, ids[0]!);
    for (const s of [GIT_SECRET, MCP_ACCESS, MCP_REFRESH, BEARER]) expect((await tableText()).includes(s)).toBe(false);
  });
});

describe("offline rotation (mh-vault-rotate)", () => {
  it("re-wraps with the service stopped, with the same environment", async () => {
    const vaultId = await newVault(admin);
    const ids = await putAll(vaultId);
    const oldKey = vault.config.masterKeyFile;
    const newKey = await vault.newKeyFile("master-offline.key");
    const cli = fileURLToPath(new URL("../../../apps/credential-vault-proxy/dist/rotate-main.js", import.meta.url));
    const env = { PATH: process.env["PATH"] ?? "/usr/bin", MH_DATABASE_URL: vault.db.url, MH_MASTER_KEY_FILE: newKey, MH_PREVIOUS_MASTER_KEY_FILES: oldKey };
    const out = execFileSync(process.execPath, [cli], { env, encoding: "utf8" });
    expect(out).toMatch(/"rewrapped":\d+/);
    await rm(oldKey);
    vault = await vault.restart({ MH_MASTER_KEY_FILE: newKey, MH_PREVIOUS_MASTER_KEY_FILES: "" });
    admin = vault.client("admin");
    expect(await masterKeyIds()).toHaveLength(1);
    await replaceKeepingSecret(vaultId, ids[0]!);
  });
});

async function replaceKeepingSecret(vaultId: string, credentialId: string): Promise<void> {
  await admin.putCredential({
    vaultId,
    credentialId,
    type: CredentialType.CREDENTIAL_TYPE_GIT_TOKEN,
    displayName: "renamed",
    config: { $case: "gitToken", value: { urlPrefix: "https://git.example.com/org", host: "", username: "" } },
    secret: undefined,
    metadata: {},
  });
}
