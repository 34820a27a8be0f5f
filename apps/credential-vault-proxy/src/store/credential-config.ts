/**
 * The non-secret part of a credential, by type: validated on the way in, stored as the proto
 * message's JSON, and matched against what a session asks for (a repository URL, an MCP server
 * URL, a host). Matching lives here so every path (git, MCP, egress) agrees on what "matches".
 */
import { invalidArgument } from "@metaharness/errors";
import {
  CredentialType,
  GitTokenCredential,
  HttpBearerCredential,
  McpBearerCredential,
  McpOAuthCredential,
  type Credential,
} from "@metaharness/proto";
import type { SecretBundle } from "../crypto/bundle.js";

export type CredentialConfig = NonNullable<Credential["config"]>;

export const AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

const TYPE_OF_CASE: Readonly<Record<CredentialConfig["$case"], CredentialType>> = {
  gitToken: CredentialType.CREDENTIAL_TYPE_GIT_TOKEN,
  mcpOauth: CredentialType.CREDENTIAL_TYPE_MCP_OAUTH,
  httpBearer: CredentialType.CREDENTIAL_TYPE_HTTP_BEARER,
  mcpBearer: CredentialType.CREDENTIAL_TYPE_MCP_BEARER,
};

/** The types that authenticate to an MCP server, by URL. */
export const MCP_TYPES: readonly CredentialType[] = [CredentialType.CREDENTIAL_TYPE_MCP_OAUTH, CredentialType.CREDENTIAL_TYPE_MCP_BEARER];

/** The MCP server URL of an MCP credential, undefined for other types. */
export function mcpServerUrlOf(config: CredentialConfig): string | undefined {
  return config.$case === "mcpOauth" || config.$case === "mcpBearer" ? config.value.mcpServerUrl : undefined;
}

export function typeOf(config: CredentialConfig): CredentialType {
  return TYPE_OF_CASE[config.$case];
}

/** The config as stored (jsonb). */
export function configToJson(config: CredentialConfig): unknown {
  switch (config.$case) {
    case "gitToken":
      return GitTokenCredential.toJSON(config.value);
    case "mcpOauth":
      return McpOAuthCredential.toJSON(config.value);
    case "httpBearer":
      return HttpBearerCredential.toJSON(config.value);
    case "mcpBearer":
      return McpBearerCredential.toJSON(config.value);
  }
}

export function configFromJson(type: CredentialType, json: unknown): CredentialConfig {
  switch (type) {
    case CredentialType.CREDENTIAL_TYPE_GIT_TOKEN:
      return { $case: "gitToken", value: GitTokenCredential.fromJSON(json) };
    case CredentialType.CREDENTIAL_TYPE_MCP_OAUTH:
      return { $case: "mcpOauth", value: McpOAuthCredential.fromJSON(json) };
    case CredentialType.CREDENTIAL_TYPE_MCP_BEARER:
      return { $case: "mcpBearer", value: McpBearerCredential.fromJSON(json) };
    default:
      return { $case: "httpBearer", value: HttpBearerCredential.fromJSON(json) };
  }
}

/** Checks and normalises a config with its (merged) secret; throws INVALID_ARGUMENT naming the field. */
export function validateConfig(config: CredentialConfig, secret: SecretBundle): CredentialConfig {
  switch (config.$case) {
    case "gitToken": {
      const c = config.value;
      const urlPrefix = c.urlPrefix === "" ? "" : normalizeUrl(c.urlPrefix, "git_token.url_prefix");
      const host = c.host.trim().toLowerCase();
      if (urlPrefix === "" && host === "") throw invalidArgument("git_token", "url_prefix or host is required");
      if (host !== "" && !isHostName(host)) throw invalidArgument("git_token.host", "is not a host name");
      if (secret.token === undefined) throw invalidArgument("secret.token", "required for a git_token");
      return { $case: "gitToken", value: { urlPrefix, host, username: c.username } };
    }
    case "mcpOauth": {
      const c = config.value;
      const mcpServerUrl = normalizeUrl(c.mcpServerUrl, "mcp_oauth.mcp_server_url");
      checkExpiry(c.expiresAt, "mcp_oauth.expires_at");
      if (secret.accessToken === undefined && secret.refreshToken === undefined) {
        throw invalidArgument("secret.access_token", "an access_token or a refresh_token is required for mcp_oauth");
      }
      const method = c.tokenEndpointAuthMethod === "" ? (secret.clientSecret === undefined ? "none" : "client_secret_basic") : c.tokenEndpointAuthMethod;
      if (!isAuthMethod(method)) throw invalidArgument("mcp_oauth.token_endpoint_auth_method", `must be one of ${AUTH_METHODS.join(", ")}`);
      let tokenEndpoint = "";
      if (secret.refreshToken !== undefined || c.tokenEndpoint !== "") {
        tokenEndpoint = normalizeUrl(c.tokenEndpoint, "mcp_oauth.token_endpoint");
        if (c.clientId === "") throw invalidArgument("mcp_oauth.client_id", "required to refresh a token");
      }
      if (method !== "none" && secret.clientSecret === undefined) {
        throw invalidArgument("secret.client_secret", `required by token_endpoint_auth_method ${method}`);
      }
      if (method === "none" && secret.clientSecret !== undefined) {
        throw invalidArgument("secret.client_secret", "the token endpoint authenticates no client (token_endpoint_auth_method none)");
      }
      const resource = c.resource === undefined || c.resource === "" ? undefined : c.resource;
      // RFC 8707: an absolute URI without a fragment.
      if (resource !== undefined && (!URL.canParse(resource) || resource.includes("#"))) {
        throw invalidArgument("mcp_oauth.resource", "must be an absolute URI without a fragment");
      }
      return { $case: "mcpOauth", value: { ...c, mcpServerUrl, tokenEndpoint, tokenEndpointAuthMethod: method, resource } };
    }
    case "mcpBearer": {
      const mcpServerUrl = normalizeUrl(config.value.mcpServerUrl, "mcp_bearer.mcp_server_url");
      if (secret.token === undefined) throw invalidArgument("secret.token", "required for an mcp_bearer");
      return { $case: "mcpBearer", value: { mcpServerUrl } };
    }
    case "httpBearer": {
      const c = config.value;
      const host = c.host.trim().toLowerCase();
      if (!isHostName(host)) throw invalidArgument("http_bearer.host", "is not a host name");
      const headerName = c.headerName === "" ? "Authorization" : c.headerName;
      if (!/^[A-Za-z0-9-]{1,64}$/.test(headerName) || /^(host|connection|proxy-.*|transfer-encoding|content-length)$/i.test(headerName)) {
        throw invalidArgument("http_bearer.header_name", "is not a header that can carry a credential");
      }
      if (secret.token === undefined) throw invalidArgument("secret.token", "required for an http_bearer");
      return { $case: "httpBearer", value: { host, headerName } };
    }
  }
}

export function isAuthMethod(value: string): value is AuthMethod {
  return (AUTH_METHODS as readonly string[]).includes(value);
}

/** An http(s) URL in one canonical form: lower-case host, no default port, no trailing slash, no fragment. */
export function normalizeUrl(raw: string, field: string): string {
  if (!URL.canParse(raw)) throw invalidArgument(field, "is not an absolute URL");
  const url = new URL(raw);
  if (url.protocol !== "http:" && url.protocol !== "https:") throw invalidArgument(field, "must be an http or https URL");
  if (url.username !== "" || url.password !== "") throw invalidArgument(field, "must not carry credentials");
  url.hash = "";
  const path = url.pathname.replace(/\/+$/, "");
  return `${url.protocol}//${url.host}${path}${url.search}`;
}

/** The same, or undefined for something that is not an http(s) URL. */
export function tryNormalizeUrl(raw: string): string | undefined {
  try {
    return normalizeUrl(raw, "url");
  } catch {
    return undefined;
  }
}

function isHostName(host: string): boolean {
  return /^(\*\.)?[a-z0-9]([a-z0-9.-]{0,252})(:\d{1,5})?$/.test(host);
}

/** How well a git_token matches a normalised repository URL: 0 for not at all, more for more specific. */
export function gitMatchScore(c: GitTokenCredential, repoUrl: string): number {
  if (c.urlPrefix !== "") {
    const prefix = c.urlPrefix;
    const next = repoUrl.charAt(prefix.length);
    if (repoUrl.startsWith(prefix) && (next === "" || next === "/" || prefix.endsWith("/") || repoUrl.slice(prefix.length) === ".git")) {
      return 1000 + prefix.length;
    }
    return 0;
  }
  return hostMatches(c.host, new URL(repoUrl).host) ? 1 : 0;
}

/**
 * `pattern` is "host", "host:port" or "*.example.com"; `host` is what a request names (a URL's
 * host: no port when it is the scheme's default). A pattern without a port matches only the
 * default port, so allowing "api.example.com" does not open its other ports.
 */
export function hostMatches(pattern: string, host: string): boolean {
  const p = pattern.toLowerCase();
  const h = host.toLowerCase();
  if (p.startsWith("*.")) {
    const suffix = p.slice(1);
    return h.endsWith(suffix) && h.length > suffix.length && !h.includes(":");
  }
  return p === h;
}

/** A time a Date holds: the wire carries seconds up to 2^63, which decode to an Invalid Date. */
export function checkExpiry(at: Date | undefined, field: string): void {
  if (at !== undefined && Number.isNaN(at.getTime())) throw invalidArgument(field, "is not a representable time");
}
