/**
 * The admin half of the service, for vaults: create, read, list, change, archive (with their
 * credentials, whose secrets are erased), delete; and master key rotation. A session's own vault
 * is made only for a session of the tenant named, as the session log knows it.
 */
import { MhError } from "@metaharness/errors";
import { checkNoNul } from "@metaharness/service-kit/grpc";
import type { Db } from "@metaharness/db";
import type { MasterKeyring } from "../crypto/master-keys.js";
import { requireVaultId } from "../store/ids.js";
import { checkMetadata } from "../store/metadata.js";
import { rotateMasterKey } from "../store/rotation.js";
import { createVault, deleteVault, getVault, listVaults, updateVault } from "../store/vaults.js";
import type { SessionVaults } from "../session/session-vaults.js";
import { archiveVault, checkText } from "./credential-writes.js";
import { guarded, KEYED, PATCH_KEYED, type GuardDeps } from "./guard.js";

export interface VaultDeps extends GuardDeps {
  readonly db: Db;
  readonly keyring: MasterKeyring;
  readonly vaults: SessionVaults;
}

export function vaultRpcs(deps: VaultDeps) {
  const { db, keyring } = deps;
  return {
    createVault: guarded("createVault", deps, async (req, ctx) => {
      checkNoNul(req, "", KEYED);
      checkText(req.displayName, "display_name");
      checkText(req.tenant, "tenant");
      if (req.sessionId !== "") {
        const tenant = await deps.vaults.tenantOf(req.sessionId);
        if (tenant !== req.tenant) throw new MhError("NOT_FOUND", `tenant ${JSON.stringify(req.tenant)} has no session ${req.sessionId}`, { field: "session_id" });
      }
      const vault = await createVault(db, { tenant: req.tenant, displayName: req.displayName, metadata: checkMetadata(req.metadata), sessionId: req.sessionId });
      ctx.logger.info({ vault_id: vault.vaultId, tenant: vault.tenant, session_id: vault.sessionId || undefined }, "vault created");
      return { vault };
    }),
    getVault: guarded("getVault", deps, async (req) => ({ vault: await getVault(db, requireVaultId(req.vaultId)) })),
    listVaults: guarded("listVaults", deps, (req) => {
      checkNoNul(req, "", KEYED);
      return listVaults(db, req);
    }),
    updateVault: guarded("updateVault", deps, async (req, ctx) => {
      const vaultId = requireVaultId(req.vaultId);
      checkNoNul(req, "", PATCH_KEYED);
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
