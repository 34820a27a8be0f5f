/**
 * Request schemas of /v1/vaults and their credentials, after the SDK's VaultCreateParams,
 * VaultUpdateParams, CredentialCreateParams and CredentialUpdateParams
 * (resources/beta/vaults/*.d.ts). Secret fields are plain bounded strings: no pattern or enum
 * whose error message could quote them.
 */
import { metadata, metadataPatch, nullable, obj, pageQuery, pathParams, str, type JsonSchema } from "../http/json-schema.js";

const name: JsonSchema = str(undefined, { minLength: 1, maxLength: 255 });
const newName: JsonSchema = { type: ["string", "null"], minLength: 1, maxLength: 255 };
const url: JsonSchema = str(undefined, { minLength: 1, maxLength: 2048 });
const secret = (description: string): JsonSchema => str(`${description} Write-only: never returned.`, { minLength: 1, maxLength: 16_384 });
const newSecret = (description: string): JsonSchema => nullable(secret(description));
const timestamp: JsonSchema = { type: ["string", "null"], description: "RFC 3339; must be in the future.", maxLength: 64 };

const tagged = (forms: readonly JsonSchema[]): JsonSchema => ({
  type: "object",
  required: ["type"],
  discriminator: { propertyName: "type" },
  oneOf: forms,
});

const tokenEndpointAuth: JsonSchema = tagged([
  obj({ type: { const: "none" } }, ["type"]),
  obj({ type: { const: "client_secret_basic" }, client_secret: secret("The OAuth client secret.") }, ["type", "client_secret"]),
  obj({ type: { const: "client_secret_post" }, client_secret: secret("The OAuth client secret.") }, ["type", "client_secret"]),
]);

const tokenEndpointAuthUpdate: JsonSchema = tagged([
  obj({ type: { const: "client_secret_basic" }, client_secret: newSecret("A new OAuth client secret.") }, ["type"]),
  obj({ type: { const: "client_secret_post" }, client_secret: newSecret("A new OAuth client secret.") }, ["type"]),
]);

const networking: JsonSchema = tagged([
  obj({ type: { const: "unrestricted" } }, ["type"]),
  obj({ type: { const: "limited" }, allowed_hosts: { type: "array", maxItems: 16, items: str(undefined, { minLength: 1, maxLength: 253 }) } }, [
    "type",
    "allowed_hosts",
  ]),
]);

const injection: JsonSchema = obj({ body: { type: "boolean" }, header: { type: "boolean" } });

const createAuth: JsonSchema = tagged([
  obj(
    {
      type: { const: "mcp_oauth" },
      access_token: secret("The OAuth access token."),
      mcp_server_url: url,
      expires_at: timestamp,
      refresh: nullable(
        obj(
          {
            client_id: str(undefined, { minLength: 1, maxLength: 512 }),
            refresh_token: secret("The OAuth refresh token."),
            token_endpoint: url,
            token_endpoint_auth: tokenEndpointAuth,
            resource: { type: ["string", "null"], maxLength: 2048 },
            scope: { type: ["string", "null"], maxLength: 2048 },
          },
          ["client_id", "refresh_token", "token_endpoint", "token_endpoint_auth"],
        ),
      ),
    },
    ["type", "access_token", "mcp_server_url"],
  ),
  obj({ type: { const: "static_bearer" }, token: secret("The bearer token."), mcp_server_url: url }, ["type", "token", "mcp_server_url"]),
  obj(
    {
      type: { const: "environment_variable" },
      secret_name: str(undefined, { minLength: 1, maxLength: 256 }),
      secret_value: secret("The secret."),
      networking,
      injection_location: injection,
    },
    ["type", "secret_name", "secret_value", "networking"],
  ),
]);

const updateAuth: JsonSchema = tagged([
  obj(
    {
      type: { const: "mcp_oauth" },
      access_token: newSecret("A new OAuth access token."),
      expires_at: timestamp,
      refresh: nullable(
        obj({
          refresh_token: newSecret("A new OAuth refresh token."),
          scope: { type: ["string", "null"], maxLength: 2048 },
          token_endpoint_auth: tokenEndpointAuthUpdate,
        }),
      ),
    },
    ["type"],
  ),
  obj({ type: { const: "static_bearer" }, token: newSecret("A new bearer token.") }, ["type"]),
  obj(
    { type: { const: "environment_variable" }, secret_value: newSecret("A new secret."), networking: nullable(networking), injection_location: injection },
    ["type"],
  ),
]);

export const createVaultBody: JsonSchema = obj({ display_name: name, metadata }, ["display_name"]);
export const updateVaultBody: JsonSchema = obj({ display_name: newName, metadata: metadataPatch });
export const vaultParams = pathParams("vault_id");
export const listVaultsQuery = obj({ ...pageQuery, include_archived: { type: "boolean" } });

export const createCredentialBody: JsonSchema = obj({ auth: createAuth, display_name: { type: ["string", "null"], maxLength: 255 }, metadata }, ["auth"]);
export const updateCredentialBody: JsonSchema = obj({ auth: updateAuth, display_name: newName, metadata: metadataPatch });
export const credentialParams = pathParams("vault_id", "credential_id");
export const listCredentialsQuery = listVaultsQuery;
