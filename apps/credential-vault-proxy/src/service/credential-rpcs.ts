/**
 * The admin half of the service, for credentials: store, read, list, change (rotation included),
 * archive, delete, and validate an MCP credential against its server. Credentials come back as
 * config, metadata and dates only; log lines name ids and types, never a secret.
 */
import type { Db } from "@metaharness/db";
import { checkNoNul } from "@metaharness/service-kit/grpc";
import { CredentialType, CredentialValidationStatus, RefreshOutcome } from "@metaharness/proto";
import type { MasterKeyring } from "../crypto/master-keys.js";
import { validateMcpCredential, type ValidateDeps } from "../mcp/validate.js";
import { credentialInVault, deleteCredential, listCredentials } from "../store/credentials.js";
import { requireCredentialId, requireVaultId } from "../store/ids.js";
import { getVault, ordToken } from "../store/vaults.js";
import { archiveOneCredential, putCredential, updateCredential } from "./credential-writes.js";
import { guarded, KEYED, type GuardDeps } from "./guard.js";

export interface CredentialDeps extends GuardDeps {
  readonly db: Db;
  readonly keyring: MasterKeyring;
  readonly validation: ValidateDeps;
}

export function credentialRpcs(deps: CredentialDeps) {
  const { db, keyring } = deps;
  return {
    putCredential: guarded("putCredential", deps, async (req, ctx) => {
      checkNoNul(req, "", KEYED);
      const credential = await putCredential(db, keyring, req);
      ctx.logger.info(
        { vault_id: credential.vaultId, credential_id: credential.credentialId, type: CredentialType[credential.type], replaced: req.credentialId !== "" },
        "credential stored",
      );
      return { credential };
    }),
    getCredential: guarded("getCredential", deps, async (req) => {
      const stored = await credentialInVault(db, requireVaultId(req.vaultId), requireCredentialId(req.credentialId));
      return { credential: stored.credential };
    }),
    listCredentials: guarded("listCredentials", deps, async (req) => {
      const vaultId = requireVaultId(req.vaultId);
      await getVault(db, vaultId);
      return listCredentials(db, { vaultId, pageSize: req.pageSize, after: ordToken(req.pageToken), includeArchived: req.includeArchived });
    }),
    updateCredential: guarded("updateCredential", deps, async (req, ctx) => {
      const credential = await updateCredential(db, keyring, req);
      const rotated = Object.entries(req.secret ?? {})
        .filter(([, v]) => v !== "")
        .map(([k]) => k);
      ctx.logger.info({ vault_id: credential.vaultId, credential_id: credential.credentialId, rotated }, "credential updated");
      return { credential };
    }),
    archiveCredential: guarded("archiveCredential", deps, async (req, ctx) => {
      const credential = await archiveOneCredential(db, keyring, req.vaultId, req.credentialId);
      ctx.logger.info({ vault_id: credential.vaultId, credential_id: credential.credentialId }, "credential archived, its secret erased");
      return { credential };
    }),
    deleteCredential: guarded("deleteCredential", deps, async (req, ctx) => {
      await deleteCredential(db, requireVaultId(req.vaultId), requireCredentialId(req.credentialId));
      ctx.logger.info({ vault_id: req.vaultId, credential_id: req.credentialId }, "credential deleted");
      return {};
    }),
    validateMcpCredential: guarded("validateMcpCredential", deps, async (req, ctx) => {
      const result = await validateMcpCredential(deps.validation, req, ctx.signal);
      ctx.logger.info(
        {
          vault_id: req.vaultId,
          credential_id: req.credentialId,
          status: CredentialValidationStatus[result.status],
          failed_step: result.mcpProbe?.method,
          refresh: result.refresh === undefined ? undefined : RefreshOutcome[result.refresh.outcome],
        },
        "credential validated",
      );
      return result;
    }),
  };
}
