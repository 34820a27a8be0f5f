/**
 * Request schemas of /v1/environments and its keys, after the SDK's EnvironmentCreateParams and
 * EnvironmentUpdateParams (resources/beta/environments/environments.d.ts).
 */
import { metadata, nullable, obj, pageQuery, pathParams, str, type JsonSchema } from "../http/json-schema.js";

const names: JsonSchema = { type: ["array", "null"], maxItems: 256, items: str(undefined, { minLength: 1, maxLength: 256 }) };

const networking: JsonSchema = nullable({
  type: "object",
  required: ["type"],
  discriminator: { propertyName: "type" },
  oneOf: [
    obj({ type: { const: "unrestricted" } }, ["type"]),
    obj(
      {
        type: { const: "limited" },
        allow_mcp_servers: { type: ["boolean", "null"] },
        allow_package_managers: { type: ["boolean", "null"] },
        allowed_hosts: { type: ["array", "null"], maxItems: 256, items: str(undefined, { minLength: 1, maxLength: 253 }) },
      },
      ["type"],
    ),
  ],
});

const packages: JsonSchema = nullable(
  obj({ type: { const: "packages" }, apt: names, cargo: names, gem: names, go: names, npm: names, pip: names }),
);

export const environmentConfig: JsonSchema = nullable({
  type: "object",
  required: ["type"],
  discriminator: { propertyName: "type" },
  oneOf: [
    obj({ type: { const: "cloud" }, networking, packages }, ["type"]),
    obj({ type: { const: "self_hosted" } }, ["type"]),
  ],
});

const scope: JsonSchema = { type: ["string", "null"], enum: ["organization", "account", null] };

export const createEnvironmentBody: JsonSchema = obj(
  {
    name: str(undefined, { minLength: 1, maxLength: 256 }),
    config: environmentConfig,
    description: { type: ["string", "null"], maxLength: 2048 },
    metadata,
    scope,
  },
  ["name"],
);

export const updateEnvironmentBody: JsonSchema = obj({
  name: { type: ["string", "null"], minLength: 1, maxLength: 256 },
  config: environmentConfig,
  description: { type: ["string", "null"], maxLength: 2048 },
  metadata: {
    type: "object",
    description: "Patch: a string upserts the key; null or an empty string deletes it.",
    additionalProperties: { type: ["string", "null"] },
  },
  scope,
});

export const environmentParams = pathParams("environment_id");
export const keyParams = pathParams("environment_id", "key_id");

export const listEnvironmentsQuery = obj({ ...pageQuery, include_archived: { type: "boolean" } });
