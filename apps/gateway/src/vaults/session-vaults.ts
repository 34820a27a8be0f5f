/**
 * The `vault_ids` of a new session: each must name a vault of the session's tenant that is not
 * archived, or the session is refused naming `vault_ids[i]` (404 for one that is missing or
 * another tenant's, 400 for an archived one). The credential vault proxy later resolves the
 * session's MCP tokens from exactly these vaults (SessionMetadata.vault_ids).
 */
import { ApiError, invalidRequest } from "../errors/api-error.js";
import { unconfigured, type VaultAccess } from "./access.js";

export async function sessionVaultIds(access: VaultAccess, tenant: string, ids: readonly string[] | undefined): Promise<string[]> {
  const named = ids ?? [];
  if (named.length === 0) return [];
  if (!access.configured) throw unconfigured("vault_ids");
  const unique = [...new Set(named)];
  const found = new Map(unique.map((id, i) => [id, i]));
  const results = await Promise.allSettled(unique.map((id) => access.vault(tenant, id)));
  for (const [i, id] of named.entries()) {
    const result = results[found.get(id) ?? -1];
    if (result === undefined) continue;
    if (result.status === "rejected") {
      const err = ApiError.from(result.reason);
      if (err.error === "not_found") throw new ApiError("not_found", `vault_ids[${i}]: vault ${JSON.stringify(id)} not found`);
      throw err;
    }
    if (result.value.archivedAt !== undefined) throw invalidRequest(`vault_ids[${i}]`, `vault ${id} is archived; new sessions cannot use it`);
  }
  return unique;
}
