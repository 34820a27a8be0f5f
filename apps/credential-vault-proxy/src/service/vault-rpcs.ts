/**
 * The admin half of the service: vaults and credentials (create, read, list, delete) and master
 * key rotation. Credentials come back as config and dates only; a secret goes in with
 * PutCredential and is sealed before anything else happens to it. A session's own vault is made
 * only for a session of the tenant named, as the session log knows it.
 */
import { MhError, invalidArgument } from "@metaharness/errors";
import type { Db } from "@metaharness/db";
import { CredentialType, type Credential, type PutCredentialRequest } from "@metaharness/proto";
import { bundleFromProto, mergeBundles, openBundle, sealBundle } from "../crypto/bundle.js";
import type { MasterKeyring } from "../crypto/master-keys.js";
import { typeOf, validateConfig } from "../store/credential-config.js";
import { credentialInVault, deleteCredential, insertCredential, listCredentials, replaceCredential, sealedCredential } from "../store/credentials.js";
import { CREDENTIAL_ID, VAULT_ID, newCredentialId } from "../store/ids.js";
import { rotateMasterKey } from "../store/rotation.js";
import { createVault, deleteVault, getVault, listVaults } from "../store/vaults.js";
import type { SessionVaults } from "../session/session-vaults.js";
import { guarded, type GuardDeps } from "./guard.js";

export interface VaultDeps extends GuardDeps {
  readonly db: Db;
  readonly keyring: MasterKeyring;
  readonly vaults: SessionVaults;
}

const MAX_NAME = 256;
const MAX_METADATA = 64;

export function vaultRpcs(deps: VaultDeps) {
  const { db, keyring } = deps;
  return {
    createVault: guarded("createVault", deps, async (req, ctx) => {
      checkText(req.displayName, "display_name");
      checkText(req.tenant, "tenant");
      if (Object.keys(req.metadata).length > MAX_METADATA) throw invalidArgument("metadata", `at most ${MAX_METADATA} entries`);
      if (req.sessionId !== "") {
        const tenant = await deps.vaults.tenantOf(req.sessionId);
        if (tenant !== req.tenant) throw new MhError("NOT_FOUND", `tenant ${JSON.stringify(req.tenant)} has no session ${req.sessionId}`, { field: "session_id" });
      }
      const vault = await createVault(db, { tenant: req.tenant, displayName: req.displayName, metadata: req.metadata, sessionId: req.sessionId });
      ctx.logger.info({ vault_id: vault.vaultId, tenant: vault.tenant, session_id: vault.sessionId || undefined }, "vault created");
      return { vault };
    }),
    getVault: guarded("getVault", deps, async (req) => ({ vault: await getVault(db, vaultId(req.vaultId)) })),
    listVaults: guarded("listVaults", deps, (req) => listVaults(db, req)),
    deleteVault: guarded("deleteVault", deps, async (req, ctx) => {
      await deleteVault(db, vaultId(req.vaultId));
      ctx.logger.info({ vault_id: req.vaultId }, "vault deleted with its credentials");
      return {};
    }),
    putCredential: guarded("putCredential", deps, async (req, ctx) => {
      const credential = await putCredential(db, keyring, req);
      ctx.logger.info(
        { vault_id: credential.vaultId, credential_id: credential.credentialId, type: CredentialType[credential.type], replaced: req.credentialId !== "" },
        "credential stored",
      );
      return { credential };
    }),
    listCredentials: guarded("listCredentials", deps, async (req) => {
      await getVault(db, vaultId(req.vaultId));
      return { credentials: await listCredentials(db, req.vaultId) };
    }),
    deleteCredential: guarded("deleteCredential", deps, async (req, ctx) => {
      await deleteCredential(db, vaultId(req.vaultId), credentialId(req.credentialId));
      ctx.logger.info({ vault_id: req.vaultId, credential_id: req.credentialId }, "credential deleted");
      return {};
    }),
    rotateMasterKey: guarded("rotateMasterKey", deps, async (_req, ctx) => {
      const result = await rotateMasterKey(db, keyring);
      ctx.logger.info({ active_key_id: result.activeKeyId, rewrapped: result.rewrapped }, "master key rotated");
      return result;
    }),
  };
}

async function putCredential(db: Db, keyring: MasterKeyring, req: PutCredentialRequest): Promise<Credential> {
  const vault = vaultId(req.vaultId);
  checkText(req.displayName, "display_name");
  const config = req.config;
  if (config === undefined) throw invalidArgument("config", "one of git_token, mcp_oauth, http_bearer is required");
  if (req.type !== CredentialType.CREDENTIAL_TYPE_UNSPECIFIED && req.type !== typeOf(config)) {
    throw invalidArgument("type", `is ${CredentialType[req.type]} but the config is ${config.$case}`);
  }
  await getVault(db, vault);
  const update = bundleFromProto(req.secret);
  if (req.credentialId === "") {
    const id = newCredentialId();
    const valid = validateConfig(config, update);
    return insertCredential(db, { credentialId: id, vaultId: vault, displayName: req.displayName, config: valid, sealed: sealBundle(update, id, keyring) });
  }
  const id = credentialId(req.credentialId);
  await credentialInVault(db, vault, id);
  return db.transaction(async (tx) => {
    const existing = await sealedCredential(tx, id, true);
    if (existing.config.$case !== config.$case) {
      throw new MhError("FAILED_PRECONDITION", `credential ${id} is a ${existing.config.$case}; its type cannot change`, { field: "type" });
    }
    const merged = mergeBundles(openBundle(existing.sealed, id, keyring), update);
    const valid = validateConfig(config, merged);
    return replaceCredential(tx, { credentialId: id, displayName: req.displayName, config: valid, sealed: sealBundle(merged, id, keyring) });
  });
}

function vaultId(id: string): string {
  if (!VAULT_ID.test(id)) throw invalidArgument("vault_id", "is not a vault id");
  return id;
}

function credentialId(id: string): string {
  if (!CREDENTIAL_ID.test(id)) throw invalidArgument("credential_id", "is not a credential id");
  return id;
}

function checkText(value: string, field: string): void {
  if (value.length > MAX_NAME) throw invalidArgument(field, `at most ${MAX_NAME} characters`);
}
