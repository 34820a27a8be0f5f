/**
 * Vaults, credentials and validations of the credential vault proxy as the API shows them (the
 * SDK's BetaManagedAgentsVault, BetaManagedAgentsCredential, BetaManagedAgentsCredentialValidation).
 * What a credential shows is its non-secret configuration: the proxy never returns a secret, and
 * nothing here could render one. Credentials other services store (git tokens for repositories,
 * bearer tokens for egress) have no SDK auth type; they show their own (`git_token`, `http_bearer`).
 */
import type {
  BetaManagedAgentsCredential,
  BetaManagedAgentsCredentialValidation,
  BetaManagedAgentsMCPOAuthAuthResponse,
  BetaManagedAgentsMCPOAuthRefreshResponse,
  BetaManagedAgentsRefreshHTTPResponse,
  BetaManagedAgentsRefreshObject,
} from "@anthropic-ai/sdk/resources/beta/vaults/credentials";
import type { BetaManagedAgentsVault } from "@anthropic-ai/sdk/resources/beta/vaults/vaults";
import {
  CredentialValidationStatus,
  RefreshOutcome,
  type Credential,
  type McpOAuthCredential,
  type ProbeHttpResponse,
  type ValidateMcpCredentialResponse,
  type Vault,
} from "@metaharness/proto";
import { ApiError } from "../errors/api-error.js";

/** Auth shown for credentials the SDK has no type for (stored by the sandbox broker's paths). */
export type ServiceAuth =
  | { type: "git_token"; url_prefix: string | null; host: string | null }
  | { type: "http_bearer"; host: string; header_name: string };

export type CredentialView = Omit<BetaManagedAgentsCredential, "auth"> & { auth: BetaManagedAgentsCredential["auth"] | ServiceAuth };

const iso = (d: Date | undefined): string | null => (d === undefined ? null : d.toISOString());
const orNull = (s: string | undefined): string | null => (s === undefined || s === "" ? null : s);

export function renderVault(v: Vault): BetaManagedAgentsVault {
  return {
    id: v.vaultId,
    type: "vault",
    display_name: v.displayName,
    metadata: v.metadata,
    created_at: iso(v.createdAt) ?? "",
    updated_at: iso(v.updatedAt ?? v.createdAt) ?? "",
    archived_at: iso(v.archivedAt),
  };
}

function oauthAuth(c: McpOAuthCredential): BetaManagedAgentsMCPOAuthAuthResponse {
  const method = c.tokenEndpointAuthMethod;
  const auth: BetaManagedAgentsMCPOAuthRefreshResponse["token_endpoint_auth"] =
    method === "client_secret_basic" || method === "client_secret_post" ? { type: method } : { type: "none" };
  return {
    type: "mcp_oauth",
    mcp_server_url: c.mcpServerUrl,
    expires_at: iso(c.expiresAt),
    refresh:
      c.tokenEndpoint === ""
        ? null
        : { client_id: c.clientId, token_endpoint: c.tokenEndpoint, token_endpoint_auth: auth, resource: orNull(c.resource), scope: orNull(c.scope) },
  };
}

function renderAuth(c: Credential): CredentialView["auth"] {
  const config = c.config;
  switch (config?.$case) {
    case "mcpOauth":
      return oauthAuth(config.value);
    case "mcpBearer":
      return { type: "static_bearer", mcp_server_url: config.value.mcpServerUrl };
    case "gitToken":
      return { type: "git_token", url_prefix: orNull(config.value.urlPrefix), host: orNull(config.value.host) };
    case "httpBearer":
      return { type: "http_bearer", host: config.value.host, header_name: config.value.headerName };
    case undefined:
      throw new ApiError("internal", `credential ${c.credentialId} has no configuration`);
  }
}

export function renderCredential(c: Credential): CredentialView {
  return {
    id: c.credentialId,
    type: "vault_credential",
    vault_id: c.vaultId,
    display_name: orNull(c.displayName),
    metadata: c.metadata,
    auth: renderAuth(c),
    created_at: iso(c.createdAt) ?? "",
    updated_at: iso(c.updatedAt) ?? "",
    archived_at: iso(c.archivedAt),
  };
}

const STATUS: Readonly<Partial<Record<CredentialValidationStatus, BetaManagedAgentsCredentialValidation["status"]>>> = {
  [CredentialValidationStatus.CREDENTIAL_VALIDATION_STATUS_VALID]: "valid",
  [CredentialValidationStatus.CREDENTIAL_VALIDATION_STATUS_INVALID]: "invalid",
};

const OUTCOME: Readonly<Partial<Record<RefreshOutcome, BetaManagedAgentsRefreshObject["status"]>>> = {
  [RefreshOutcome.REFRESH_OUTCOME_SUCCEEDED]: "succeeded",
  [RefreshOutcome.REFRESH_OUTCOME_FAILED]: "failed",
  [RefreshOutcome.REFRESH_OUTCOME_CONNECT_ERROR]: "connect_error",
  [RefreshOutcome.REFRESH_OUTCOME_NO_REFRESH_TOKEN]: "no_refresh_token",
};

function httpResponse(r: ProbeHttpResponse | undefined): BetaManagedAgentsRefreshHTTPResponse | null {
  return r === undefined ? null : { status_code: r.statusCode, content_type: r.contentType, body: r.body, body_truncated: r.bodyTruncated };
}

export function renderValidation(vaultId: string, credentialId: string, v: ValidateMcpCredentialResponse): BetaManagedAgentsCredentialValidation {
  const outcome = v.refresh === undefined ? undefined : OUTCOME[v.refresh.outcome];
  return {
    type: "vault_credential_validation",
    credential_id: credentialId,
    vault_id: vaultId,
    status: STATUS[v.status] ?? "unknown",
    has_refresh_token: v.hasRefreshToken,
    mcp_probe: v.mcpProbe === undefined ? null : { method: v.mcpProbe.method, http_response: httpResponse(v.mcpProbe.httpResponse) },
    refresh: outcome === undefined ? null : { status: outcome, http_response: httpResponse(v.refresh?.httpResponse) },
    validated_at: iso(v.validatedAt) ?? new Date().toISOString(),
  };
}
