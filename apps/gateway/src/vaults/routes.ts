/**
 * /v1/vaults: create, retrieve, update, list, archive, delete, on the credential vault proxy (see
 * vaults/access.ts for how tenants are kept apart). Lists are oldest first; the proxy's page
 * token travels inside our cursor, bound to the list.
 */
import type { PageCursorResponse } from "@anthropic-ai/sdk/core/pagination";
import type { BetaManagedAgentsDeletedVault, BetaManagedAgentsVault, VaultCreateParams, VaultUpdateParams } from "@anthropic-ai/sdk/resources/beta/vaults/vaults";
import { decodeCursor, encodeCursor, OBJECT_PAGE, pageLimit } from "../http/pagination.js";
import { checkMetadata, splitPatch } from "../http/metadata.js";
import { renderVault } from "./body.js";
import { createVaultBody, listVaultsQuery, updateVaultBody, vaultParams } from "./schemas.js";
import { VaultAccess } from "./access.js";
import type { CredentialProxyRpc } from "../clients.js";
import type { Router } from "../http/router.js";

type VaultCreateBody = Omit<VaultCreateParams, "betas" | "workspace_id">;
type VaultUpdateBody = Omit<VaultUpdateParams, "betas" | "workspace_id">;
export interface VaultParams {
  vault_id: string;
}
export interface ListQuery {
  limit?: number;
  page?: string;
  include_archived?: boolean;
}

/** The proxy's page tokens are the decimal keys of its keyset. */
export const isProxyToken = (p: unknown): p is string => typeof p === "string" && /^\d{1,19}$/.test(p);

/** Undefined when this deployment runs without a credential vault proxy. */
export function registerVaultRoutes(router: Router, credentials: CredentialProxyRpc | undefined): void {
  const vaults = new VaultAccess(credentials);
  const unavailable = "credential_vault_unconfigured" as const;

  router.add<{ Body: VaultCreateBody }>(
    {
      method: "POST",
      url: "/v1/vaults",
      sdk: "beta.vaults.create",
      summary: "Create a vault (in the credential vault proxy) for credentials sessions can use.",
      response: "BetaManagedAgentsVault",
      errors: ["invalid_metadata", "request_too_large", unavailable],
      schema: { body: createVaultBody },
    },
    async (req): Promise<BetaManagedAgentsVault> => {
      const vault = await vaults.createVault(req.tenant, req.body.display_name, checkMetadata(req.body.metadata ?? {}));
      req.log.info({ vault_id: vault.vaultId }, "vault created");
      return renderVault(vault);
    },
  );

  router.add<{ Querystring: ListQuery }>(
    {
      method: "GET",
      url: "/v1/vaults",
      sdk: "beta.vaults.list",
      summary: "List vaults, oldest first; archived ones only with include_archived.",
      response: "PageCursor<BetaManagedAgentsVault>",
      errors: [unavailable],
      schema: { querystring: listVaultsQuery },
    },
    async (req): Promise<PageCursorResponse<BetaManagedAgentsVault>> => {
      const page = await vaults.listVaults(req.tenant, {
        pageSize: pageLimit(req.query.limit, OBJECT_PAGE),
        pageToken: decodeCursor("vaults", req.query.page, isProxyToken)?.position ?? "",
        includeArchived: req.query.include_archived === true,
      });
      return { data: page.vaults.map(renderVault), next_page: page.nextPageToken === "" ? null : encodeCursor("vaults", page.nextPageToken) };
    },
  );

  router.add<{ Params: VaultParams }>(
    {
      method: "GET",
      url: "/v1/vaults/:vault_id",
      sdk: "beta.vaults.retrieve",
      summary: "Retrieve a vault.",
      response: "BetaManagedAgentsVault",
      errors: ["not_found", unavailable],
      schema: { params: vaultParams },
    },
    async (req): Promise<BetaManagedAgentsVault> => renderVault(await vaults.vault(req.tenant, req.params.vault_id)),
  );

  router.add<{ Params: VaultParams; Body: VaultUpdateBody }>(
    {
      method: "POST",
      url: "/v1/vaults/:vault_id",
      sdk: "beta.vaults.update",
      summary: "Update a vault's display name and metadata (a patch). An archived vault cannot change.",
      response: "BetaManagedAgentsVault",
      errors: ["invalid_metadata", "not_found", "request_too_large", unavailable],
      schema: { params: vaultParams, body: updateVaultBody },
    },
    async (req): Promise<BetaManagedAgentsVault> =>
      renderVault(
        await vaults.updateVault(req.tenant, req.params.vault_id, { displayName: req.body.display_name ?? undefined, ...splitPatch(req.body.metadata) }),
      ),
  );

  router.add<{ Params: VaultParams }>(
    {
      method: "DELETE",
      url: "/v1/vaults/:vault_id",
      sdk: "beta.vaults.delete",
      summary: "Delete a vault with its credentials.",
      response: "BetaManagedAgentsDeletedVault",
      errors: ["not_found", unavailable],
      schema: { params: vaultParams },
    },
    async (req): Promise<BetaManagedAgentsDeletedVault> => {
      await vaults.deleteVault(req.tenant, req.params.vault_id);
      req.log.info({ vault_id: req.params.vault_id }, "vault deleted");
      return { id: req.params.vault_id, type: "vault_deleted" };
    },
  );

  router.add<{ Params: VaultParams }>(
    {
      method: "POST",
      url: "/v1/vaults/:vault_id/archive",
      sdk: "beta.vaults.archive",
      summary: "Archive a vault: its credentials are archived (their secrets erased); sessions can no longer use it.",
      response: "BetaManagedAgentsVault",
      errors: ["not_found", unavailable],
      schema: { params: vaultParams },
    },
    async (req): Promise<BetaManagedAgentsVault> => {
      const vault = await vaults.archiveVault(req.tenant, req.params.vault_id);
      req.log.info({ vault_id: vault.vaultId }, "vault archived");
      return renderVault(vault);
    },
  );
}
