/**
 * /v1/vaults/:vault_id/credentials: create, list, retrieve, update (secret rotation included),
 * delete, archive, and mcp_oauth_validate, on the credential vault proxy. Secrets go in with
 * create and update and never come back: every answer is the credential's configuration, and no
 * log line here names more than ids and types.
 */
import type { PageCursorResponse } from "@anthropic-ai/sdk/core/pagination";
import type {
  BetaManagedAgentsCredentialValidation,
  BetaManagedAgentsDeletedCredential,
} from "@anthropic-ai/sdk/resources/beta/vaults/credentials";
import { decodeCursor, encodeCursor, OBJECT_PAGE, pageLimit } from "../http/pagination.js";
import { putRequest, updateRequest, type CredentialCreateBody, type CredentialUpdateBody } from "./credential-body.js";
import { renderCredential, renderValidation, type CredentialView } from "./body.js";
import { createCredentialBody, credentialParams, listCredentialsQuery, updateCredentialBody, vaultParams } from "./schemas.js";
import { VaultAccess } from "./access.js";
import type { CredentialProxyRpc } from "../clients.js";
import type { Router } from "../http/router.js";
import { isProxyToken, type ListQuery, type VaultParams } from "./routes.js";

interface CredentialParams extends VaultParams {
  credential_id: string;
}

export interface CredentialRouteDeps {
  /** Undefined when this deployment runs without a credential vault proxy. */
  readonly credentials: CredentialProxyRpc | undefined;
  now(): Date;
}

export function registerCredentialRoutes(router: Router, ctx: CredentialRouteDeps): void {
  const vaults = new VaultAccess(ctx.credentials);
  const unavailable = "credential_vault_unconfigured" as const;
  const base = "/v1/vaults/:vault_id/credentials";

  router.add<{ Params: VaultParams; Body: CredentialCreateBody }>(
    {
      method: "POST",
      url: base,
      sdk: "beta.vaults.credentials.create",
      summary: "Add a credential to a vault: mcp_oauth or static_bearer for an MCP server (at most one active per server URL).",
      response: "BetaManagedAgentsCredential",
      errors: ["invalid_metadata", "not_found", "conflict", "request_too_large", unavailable],
      schema: { params: vaultParams, body: createCredentialBody },
    },
    async (req): Promise<CredentialView> => {
      const credential = await vaults.createCredential(req.tenant, putRequest(req.params.vault_id, req.body, ctx.now()));
      req.log.info({ vault_id: credential.vaultId, credential_id: credential.credentialId, auth_type: req.body.auth.type }, "credential created");
      return renderCredential(credential);
    },
  );

  router.add<{ Params: VaultParams; Querystring: ListQuery }>(
    {
      method: "GET",
      url: base,
      sdk: "beta.vaults.credentials.list",
      summary: "List a vault's credentials, oldest first; archived ones only with include_archived.",
      response: "PageCursor<BetaManagedAgentsCredential>",
      errors: ["not_found", unavailable],
      schema: { params: vaultParams, querystring: listCredentialsQuery },
    },
    async (req): Promise<PageCursorResponse<CredentialView>> => {
      const list = `credentials:${req.params.vault_id}`;
      const page = await vaults.listCredentials(req.tenant, req.params.vault_id, {
        pageSize: pageLimit(req.query.limit, OBJECT_PAGE),
        pageToken: decodeCursor(list, req.query.page, isProxyToken)?.position ?? "",
        includeArchived: req.query.include_archived === true,
      });
      return { data: page.credentials.map(renderCredential), next_page: page.nextPageToken === "" ? null : encodeCursor(list, page.nextPageToken) };
    },
  );

  router.add<{ Params: CredentialParams }>(
    {
      method: "GET",
      url: `${base}/:credential_id`,
      sdk: "beta.vaults.credentials.retrieve",
      summary: "Retrieve a credential: its configuration, never its secret.",
      response: "BetaManagedAgentsCredential",
      errors: ["not_found", unavailable],
      schema: { params: credentialParams },
    },
    async (req): Promise<CredentialView> => renderCredential(await vaults.credential(req.tenant, req.params.vault_id, req.params.credential_id)),
  );

  router.add<{ Params: CredentialParams; Body: CredentialUpdateBody }>(
    {
      method: "POST",
      url: `${base}/:credential_id`,
      sdk: "beta.vaults.credentials.update",
      summary: "Update a credential: display name, metadata (a patch), expiry and scope, and rotate its secrets. Its type and server URL cannot change.",
      response: "BetaManagedAgentsCredential",
      errors: ["invalid_metadata", "not_found", "request_too_large", unavailable],
      schema: { params: credentialParams, body: updateCredentialBody },
    },
    async (req): Promise<CredentialView> => {
      const { vault_id: vaultId, credential_id: credentialId } = req.params;
      const credential = await vaults.updateCredential(req.tenant, updateRequest(vaultId, credentialId, req.body, ctx.now()));
      req.log.info({ vault_id: vaultId, credential_id: credentialId, auth_type: req.body.auth?.type }, "credential updated");
      return renderCredential(credential);
    },
  );

  router.add<{ Params: CredentialParams }>(
    {
      method: "DELETE",
      url: `${base}/:credential_id`,
      sdk: "beta.vaults.credentials.delete",
      summary: "Delete a credential.",
      response: "BetaManagedAgentsDeletedCredential",
      errors: ["not_found", unavailable],
      schema: { params: credentialParams },
    },
    async (req): Promise<BetaManagedAgentsDeletedCredential> => {
      await vaults.deleteCredential(req.tenant, req.params.vault_id, req.params.credential_id);
      req.log.info({ vault_id: req.params.vault_id, credential_id: req.params.credential_id }, "credential deleted");
      return { id: req.params.credential_id, type: "vault_credential_deleted" };
    },
  );

  router.add<{ Params: CredentialParams }>(
    {
      method: "POST",
      url: `${base}/:credential_id/archive`,
      sdk: "beta.vaults.credentials.archive",
      summary: "Archive a credential: its secret is erased and sessions no longer use it.",
      response: "BetaManagedAgentsCredential",
      errors: ["not_found", unavailable],
      schema: { params: credentialParams },
    },
    async (req): Promise<CredentialView> => renderCredential(await vaults.archiveCredential(req.tenant, req.params.vault_id, req.params.credential_id)),
  );

  router.add<{ Params: CredentialParams }>(
    {
      method: "POST",
      url: `${base}/:credential_id/mcp_oauth_validate`,
      sdk: "beta.vaults.credentials.mcpOAuthValidate",
      summary: "Probe an MCP credential against its server (refreshing a rejected OAuth token once) and say whether it works.",
      response: "BetaManagedAgentsCredentialValidation",
      errors: ["not_found", unavailable],
      schema: { params: credentialParams },
    },
    async (req): Promise<BetaManagedAgentsCredentialValidation> => {
      const { vault_id: vaultId, credential_id: credentialId } = req.params;
      return renderValidation(vaultId, credentialId, await vaults.validateCredential(req.tenant, vaultId, credentialId));
    },
  );
}
