/**
 * Every write of a credential, each in one transaction: create (a vault holds at most one active
 * MCP credential per server URL, checked under the vault's row lock), replace (PutCredential with
 * an id), update in place (UpdateCredential: name, metadata patch, expiry, scope, rotated secrets)
 * and archive (the secret is erased). A secret is sealed before anything else happens to it, and
 * a stored secret is opened only to merge a rotation into it or to check what the config needs.
 */
import { MhError, invalidArgument } from "@metaharness/errors";
import type { Db, Queryable } from "@metaharness/db";
import {
  CredentialType,
  type Credential,
  type PutCredentialRequest,
  type UpdateCredentialRequest,
  type Vault,
} from "@metaharness/proto";
import { bundleFromProto, mergeBundles, openBundle, sealBundle, secretsOf, type SecretBundle } from "../crypto/bundle.js";
import type { MasterKeyring } from "../crypto/master-keys.js";
import { MCP_TYPES, checkExpiry, mcpServerUrlOf, typeOf, validateConfig, type CredentialConfig } from "../store/credential-config.js";
import {
  activeCredentialIds,
  activeMcpCredential,
  archiveCredential,
  credentialInVault,
  insertCredential,
  replaceCredential,
  sealedCredential,
} from "../store/credentials.js";
import { newCredentialId, requireCredentialId, requireVaultId } from "../store/ids.js";
import { checkMetadata, patchMetadata } from "../store/metadata.js";
import { getVault, markVaultArchived, requireActive } from "../store/vaults.js";

export const MAX_NAME = 256;

export function checkText(value: string, field: string): void {
  if (value.length > MAX_NAME) throw invalidArgument(field, `at most ${MAX_NAME} characters`);
}

export async function putCredential(db: Db, keyring: MasterKeyring, req: PutCredentialRequest): Promise<Credential> {
  const vaultId = requireVaultId(req.vaultId);
  checkText(req.displayName, "display_name");
  const config = req.config;
  if (config === undefined) throw invalidArgument("config", "one of git_token, mcp_oauth, http_bearer, mcp_bearer is required");
  if (req.type !== CredentialType.CREDENTIAL_TYPE_UNSPECIFIED && req.type !== typeOf(config)) {
    // ts-proto keeps a number this version does not know as it came (99): the enum names none.
    const type = CredentialType[req.type] ?? `${req.type}, no CredentialType`;
    throw invalidArgument("type", `is ${type} but the config is ${config.$case}`);
  }
  const metadata = checkMetadata(req.metadata);
  const update = bundleFromProto(req.secret);
  if (req.credentialId === "") {
    const id = newCredentialId();
    const valid = validateConfig(config, update);
    return db.transaction(async (tx) => {
      requireActive(await getVault(tx, vaultId, true));
      await refuseSecondMcpCredential(tx, vaultId, valid, id);
      return insertCredential(tx, { credentialId: id, vaultId, displayName: req.displayName, metadata, config: valid, sealed: sealBundle(update, id, keyring) });
    });
  }
  const id = requireCredentialId(req.credentialId);
  return db.transaction(async (tx) => {
    requireActive(await getVault(tx, vaultId, true));
    await credentialInVault(tx, vaultId, id);
    const existing = await sealedCredential(tx, id, true);
    requireUnarchived(existing.credential);
    if (existing.config.$case !== config.$case) {
      throw new MhError("FAILED_PRECONDITION", `credential ${id} is a ${existing.config.$case}; its type cannot change`, { field: "type" });
    }
    const merged = mergeBundles(openBundle(existing.sealed, id, keyring), update);
    const valid = validateConfig(config, merged);
    await refuseSecondMcpCredential(tx, vaultId, valid, id);
    return replaceCredential(tx, { credentialId: id, displayName: req.displayName, metadata, config: valid, sealed: sealBundle(merged, id, keyring) });
  });
}

export async function updateCredential(db: Db, keyring: MasterKeyring, req: UpdateCredentialRequest): Promise<Credential> {
  const vaultId = requireVaultId(req.vaultId);
  const id = requireCredentialId(req.credentialId);
  if (req.displayName !== undefined) checkText(req.displayName, "display_name");
  const update = bundleFromProto(req.secret);
  const rotates = secretsOf(update).length > 0;
  return db.transaction(async (tx) => {
    requireActive(await getVault(tx, vaultId));
    await credentialInVault(tx, vaultId, id);
    const existing = await sealedCredential(tx, id, true);
    requireUnarchived(existing.credential);
    if (req.type !== CredentialType.CREDENTIAL_TYPE_UNSPECIFIED && req.type !== existing.credential.type) {
      throw invalidArgument("type", `credential ${id} is ${CredentialType[existing.credential.type]}; its type cannot change`);
    }
    checkRotation(existing.config, update);
    const stored = openBundle(existing.sealed, id, keyring);
    const merged = rotates ? mergeBundles(stored, update) : stored;
    const valid = validateConfig(changedConfig(existing.config, req), merged);
    return replaceCredential(tx, {
      credentialId: id,
      displayName: req.displayName ?? existing.credential.displayName,
      metadata: patchMetadata(existing.credential.metadata, req.metadata),
      config: valid,
      sealed: rotates ? sealBundle(merged, id, keyring) : undefined,
    });
  });
}

export async function archiveOneCredential(db: Db, keyring: MasterKeyring, vaultIdRaw: string, credentialIdRaw: string): Promise<Credential> {
  const vaultId = requireVaultId(vaultIdRaw);
  const id = requireCredentialId(credentialIdRaw);
  return db.transaction(async (tx) => {
    await credentialInVault(tx, vaultId, id);
    return archiveCredential(tx, id, sealBundle({}, id, keyring));
  });
}

/** Archives the vault and erases the secret of every credential it holds. */
export async function archiveVault(db: Db, keyring: MasterKeyring, vaultIdRaw: string): Promise<{ vault: Vault; credentials: number }> {
  const vaultId = requireVaultId(vaultIdRaw);
  return db.transaction(async (tx) => {
    await getVault(tx, vaultId, true);
    const ids = await activeCredentialIds(tx, vaultId);
    for (const id of ids) await archiveCredential(tx, id, sealBundle({}, id, keyring));
    return { vault: await markVaultArchived(tx, vaultId), credentials: ids.length };
  });
}

function requireUnarchived(credential: Credential): void {
  if (credential.archivedAt !== undefined) {
    throw new MhError("FAILED_PRECONDITION", `credential ${credential.credentialId} is archived and cannot change`, { field: "credential_id" });
  }
}

/** A vault holds one active credential per MCP server, so which one a session uses is never a guess. */
async function refuseSecondMcpCredential(db: Queryable, vaultId: string, config: CredentialConfig, exceptId: string): Promise<void> {
  const serverUrl = mcpServerUrlOf(config);
  if (serverUrl === undefined) return;
  const other = await activeMcpCredential(db, { vaultId, serverUrl, types: MCP_TYPES, exceptId });
  if (other !== undefined) {
    const field = config.$case === "mcpOauth" ? "mcp_oauth.mcp_server_url" : "mcp_bearer.mcp_server_url";
    throw new MhError("ALREADY_EXISTS", `${field}: vault ${vaultId} already holds credential ${other} for ${serverUrl}`, { field });
  }
}

/** The secrets an update may rotate must fit what the credential was created with. */
function checkRotation(config: CredentialConfig, update: SecretBundle): void {
  if (config.$case !== "mcpOauth") {
    const oauthOnly = { "secret.access_token": update.accessToken, "secret.refresh_token": update.refreshToken, "secret.client_secret": update.clientSecret };
    for (const [field, value] of Object.entries(oauthOnly)) {
      if (value !== undefined) throw invalidArgument(field, `a ${config.$case} credential holds only a token`);
    }
    return;
  }
  if (update.token !== undefined) throw invalidArgument("secret.token", "an mcp_oauth credential holds an access_token, not a token");
  if (update.refreshToken !== undefined && config.value.tokenEndpoint === "") {
    throw invalidArgument("secret.refresh_token", "the credential was created without a refresh configuration (token endpoint, client id); create a new one to add it");
  }
  if (update.clientSecret !== undefined && config.value.tokenEndpointAuthMethod === "none") {
    throw invalidArgument("secret.client_secret", "the credential authenticates no client to its token endpoint (none); it takes no client secret");
  }
}

/** The stored config with the update's expiry and scope; other types have neither. */
function changedConfig(config: CredentialConfig, req: UpdateCredentialRequest): CredentialConfig {
  if (config.$case !== "mcpOauth") {
    if (req.expiresAt !== undefined) throw invalidArgument("expires_at", `a ${config.$case} credential does not expire`);
    if (req.scope !== undefined) throw invalidArgument("scope", `a ${config.$case} credential has no scope`);
    return config;
  }
  checkExpiry(req.expiresAt, "expires_at");
  return {
    $case: "mcpOauth",
    value: { ...config.value, expiresAt: req.expiresAt ?? config.value.expiresAt, scope: req.scope ?? config.value.scope },
  };
}
