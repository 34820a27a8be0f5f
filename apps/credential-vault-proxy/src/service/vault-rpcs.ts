/**
 * The admin half of the service, for vaults: create, read, list, change, archive (with their
 * credentials, whose secrets are erased), delete; and master key rotation.
 */
import type { Db } from "@metaharness/db";
import type { MasterKeyring } from "../crypto/master-keys.js";
import { requireVaultId } from "../store/ids.js";
import { checkMetadata } from "../store/metadata.js";
import { rotateMasterKey } from "../store/rotation.js";
import { createVault, deleteVault, getVault, listVaults, updateVault } from "../store/vaults.js";
import { archiveVault, checkText } from "./credential-writes.js";
import { guarded, type GuardDeps } from "./guard.js";

export interface VaultDeps extends GuardDeps {
  readonly db: Db;
  readonly keyring: MasterKeyring;
}

export function vaultRpcs(deps: VaultDeps) {
  const { db, keyring } = deps;
  return {
    createVault: guarded("createVault", deps, async (req, ctx) => {
      checkText(req.displayName, "display_name");
      checkText(req.tenant, "tenant");
      const vault = await createVault(db, { tenant: req.tenant, displayName: req.displayName, metadata: checkMetadata(req.metadata) });
      ctx.logger.info({ vault_id: vault.vaultId, tenant: vault.tenant }, "vault created");
      return { vault };
    }),
    getVault: guarded("getVault", deps, async (req) => ({ vault: await getVault(db, requireVaultId(req.vaultId)) })),
    listVaults: guarded("listVaults", deps, (req) => listVaults(db, req)),
    updateVault: guarded("updateVault", deps, async (req, ctx) => {
      const vaultId = requireVaultId(req.vaultId);
      if (req.displayName !== undefined) checkText(req.displayName, "display_name");
      const vault = await db.transaction((tx) => updateVault(tx, vaultId, { displayName: req.displayName, metadata: req.metadata }));
      ctx.logger.info({ vault_id: vaultId }, "vault updated");
      return { vault };
    }),
    archiveVault: guarded("archiveVault", deps, async (req, ctx) => {
      const { vault, credentials } = await archiveVault(db, keyring, req.vaultId);
      ctx.logger.info({ vault_id: vault.vaultId, credentials_archived: credentials }, "vault archived");
      return { vault };
    }),
    deleteVault: guarded("deleteVault", deps, async (req, ctx) => {
      await deleteVault(db, requireVaultId(req.vaultId));
      ctx.logger.info({ vault_id: req.vaultId }, "vault deleted with its credentials");
      return {};
    }),
    rotateMasterKey: guarded("rotateMasterKey", deps, async (_req, ctx) => {
      const result = await rotateMasterKey(db, keyring);
      ctx.logger.info({ active_key_id: result.activeKeyId, rewrapped: result.rewrapped }, "master key rotated");
      return result;
    }),
  };
}
