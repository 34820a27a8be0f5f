/**
 * The SDK's credential params onto the credential vault proxy's requests:
 * - `mcp_oauth` is an MCP_OAUTH credential (server URL, expiry, refresh configuration in the
 *   clear; access token, refresh token and client secret sealed);
 * - `static_bearer` is an MCP_BEARER credential (server URL in the clear, token sealed);
 * - `environment_variable` is refused (400 naming `auth.type`): it needs the sandbox's egress to
 *   substitute a placeholder in outbound requests, which it does not do.
 * On update, a null field is left as it is (as an omitted one); `refresh.scope: ""` clears the
 * scope. Rules the proxy checks (URLs, what a token endpoint needs) come back naming these fields.
 */
import type { CredentialCreateParams, CredentialUpdateParams } from "@anthropic-ai/sdk/resources/beta/vaults/credentials";
import { CredentialType, type CredentialSecret, type PutCredentialRequest, type UpdateCredentialRequest } from "@metaharness/proto";
import { invalidRequest } from "../errors/api-error.js";
import { checkMetadata, splitPatch } from "../http/metadata.js";

export type CredentialCreateBody = Omit<CredentialCreateParams, "betas" | "workspace_id">;
export type CredentialUpdateBody = Omit<CredentialUpdateParams, "betas" | "workspace_id" | "vault_id">;

const NO_ENVIRONMENT_VARIABLES =
  "environment_variable credentials are not supported by this gateway: its sandboxes' egress does not substitute secrets into outbound requests; use static_bearer or mcp_oauth for an MCP server";

const NO_SECRET: CredentialSecret = { token: "", accessToken: "", refreshToken: "", clientSecret: "" };

/** An RFC 3339 expiry in the future, or undefined for null/absent. */
function expiry(value: string | null | undefined, now: Date): Date | undefined {
  if (value === undefined || value === null) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw invalidRequest("auth.expires_at", "must be an RFC 3339 timestamp");
  if (ms <= now.getTime()) throw invalidRequest("auth.expires_at", "must be in the future");
  return new Date(ms);
}

export function putRequest(vaultId: string, body: CredentialCreateBody, now: Date): PutCredentialRequest {
  const base = { vaultId, credentialId: "", displayName: body.display_name ?? "", metadata: checkMetadata(body.metadata ?? {}) };
  const auth = body.auth;
  switch (auth.type) {
    case "mcp_oauth": {
      const refresh = auth.refresh ?? undefined;
      const tokenAuth = refresh?.token_endpoint_auth;
      return {
        ...base,
        type: CredentialType.CREDENTIAL_TYPE_MCP_OAUTH,
        config: {
          $case: "mcpOauth",
          value: {
            mcpServerUrl: auth.mcp_server_url,
            expiresAt: expiry(auth.expires_at, now),
            clientId: refresh?.client_id ?? "",
            tokenEndpoint: refresh?.token_endpoint ?? "",
            tokenEndpointAuthMethod: tokenAuth?.type ?? "",
            scope: refresh?.scope ?? "",
            resource: refresh?.resource ?? undefined,
          },
        },
        secret: {
          ...NO_SECRET,
          accessToken: auth.access_token,
          refreshToken: refresh?.refresh_token ?? "",
          clientSecret: tokenAuth !== undefined && tokenAuth.type !== "none" ? tokenAuth.client_secret : "",
        },
      };
    }
    case "static_bearer":
      return {
        ...base,
        type: CredentialType.CREDENTIAL_TYPE_MCP_BEARER,
        config: { $case: "mcpBearer", value: { mcpServerUrl: auth.mcp_server_url } },
        secret: { ...NO_SECRET, token: auth.token },
      };
    case "environment_variable":
      throw invalidRequest("auth.type", NO_ENVIRONMENT_VARIABLES);
  }
}

export function updateRequest(vaultId: string, credentialId: string, body: CredentialUpdateBody, now: Date): UpdateCredentialRequest {
  const request: UpdateCredentialRequest = {
    vaultId,
    credentialId,
    type: CredentialType.CREDENTIAL_TYPE_UNSPECIFIED,
    // Absent keeps the name; null clears it (a credential's name is optional; a vault's is not).
    displayName: body.display_name === null ? "" : body.display_name,
    metadata: splitPatch(body.metadata),
    expiresAt: undefined,
    scope: undefined,
    secret: NO_SECRET,
  };
  const auth = body.auth;
  switch (auth?.type) {
    case undefined:
      return request;
    case "mcp_oauth": {
      const refresh = auth.refresh ?? undefined;
      return {
        ...request,
        type: CredentialType.CREDENTIAL_TYPE_MCP_OAUTH,
        expiresAt: expiry(auth.expires_at, now),
        scope: refresh?.scope ?? undefined,
        secret: {
          ...NO_SECRET,
          accessToken: auth.access_token ?? "",
          refreshToken: refresh?.refresh_token ?? "",
          clientSecret: refresh?.token_endpoint_auth?.client_secret ?? "",
        },
      };
    }
    case "static_bearer":
      return { ...request, type: CredentialType.CREDENTIAL_TYPE_MCP_BEARER, secret: { ...NO_SECRET, token: auth.token ?? "" } };
    case "environment_variable":
      throw invalidRequest("auth.type", NO_ENVIRONMENT_VARIABLES);
  }
}
