/**
 * Request schemas of /v1/agents, after the SDK's AgentCreateParams and AgentUpdateParams
 * (resources/beta/agents/agents.d.ts).
 */
import { byType, createdAtQuery, metadata, metadataPatch, nullable, obj, pageQuery, pathParams, str, tagged, type JsonSchema } from "../http/json-schema.js";

const policy = nullable(tagged(["always_allow", "always_ask", "auto"]));
const defaultConfig = nullable(obj({ enabled: { type: ["boolean", "null"] }, permission_policy: policy }));

export const SANDBOX_TOOL_NAMES = ["bash", "edit", "read", "write", "glob", "grep"] as const;
export const WEB_TOOL_NAMES = ["web_fetch", "web_search"] as const;

const domains: JsonSchema = { type: "array", items: str(undefined, { minLength: 1, maxLength: 253 }), minItems: 1, maxItems: 64 };

const toolFilter: JsonSchema = byType({
  string: { enum: ["all", "none"] },
  object: obj(
    {
      type: { enum: ["all", "none", "only", "except"] },
      tools: { type: "array", minItems: 1, maxItems: 128, items: obj({ name: str(), type: { const: "tool_reference" } }, ["name", "type"]) },
    },
    ["type"],
  ),
  nullable: true,
});

const common = { enabled: { type: ["boolean", "null"] }, permission_policy: policy };

const toolConfig: JsonSchema = {
  type: "object",
  required: ["name"],
  discriminator: { propertyName: "name" },
  oneOf: [
    obj({ name: { enum: SANDBOX_TOOL_NAMES }, type: { enum: SANDBOX_TOOL_NAMES }, ...common }, ["name"]),
    obj(
      {
        name: { const: "web_fetch" },
        type: { const: "web_fetch" },
        ...common,
        allowed_domains: domains,
        blocked_domains: domains,
        max_content_tokens: { type: ["integer", "null"], minimum: 1 },
        url_sources: nullable(
          obj({ client_tool_results: toolFilter, server_tool_results: toolFilter, user_input: toolFilter }),
        ),
      },
      ["name"],
    ),
    obj(
      {
        name: { const: "web_search" },
        type: { const: "web_search" },
        ...common,
        allowed_domains: domains,
        blocked_domains: domains,
        user_location: nullable(
          obj(
            {
              type: { const: "approximate" },
              city: { type: ["string", "null"] },
              country: { type: ["string", "null"] },
              region: { type: ["string", "null"] },
              timezone: { type: ["string", "null"] },
            },
            ["type"],
          ),
        ),
      },
      ["name"],
    ),
  ],
};

export const toolParam: JsonSchema = {
  type: "object",
  required: ["type"],
  discriminator: { propertyName: "type" },
  oneOf: [
    obj(
      { type: { const: "agent_toolset_20260401" }, configs: { type: "array", maxItems: 8, items: toolConfig }, default_config: defaultConfig },
      ["type"],
    ),
    obj(
      {
        type: { const: "mcp_toolset" },
        mcp_server_name: str(undefined, { minLength: 1, maxLength: 255 }),
        configs: { type: "array", maxItems: 256, items: obj({ name: str(undefined, { minLength: 1, maxLength: 128 }), ...common }, ["name"]) },
        default_config: defaultConfig,
      },
      ["type", "mcp_server_name"],
    ),
    obj(
      {
        type: { const: "custom" },
        name: str("1-128 of letters, digits, _ and -.", { pattern: "^[A-Za-z0-9_-]{1,128}$" }),
        description: str(undefined, { maxLength: 10_000 }),
        input_schema: {
          type: "object",
          properties: {
            type: { const: "object" },
            properties: { type: ["object", "null"] },
            required: { type: ["array", "null"], items: { type: "string" } },
          },
          required: ["type"],
        },
      },
      ["type", "name", "description", "input_schema"],
    ),
  ],
};

export const tools: JsonSchema = { type: "array", maxItems: 256, items: toolParam };

export const mcpServers: JsonSchema = {
  type: "array",
  maxItems: 20,
  items: obj({ type: { const: "url" }, name: str(undefined, { minLength: 1, maxLength: 255 }), url: str(undefined, { minLength: 1, maxLength: 2048 }) }, [
    "type",
    "name",
    "url",
  ]),
};

export const skills: JsonSchema = {
  type: "array",
  items: obj({ type: { enum: ["anthropic", "custom"] }, skill_id: str(), version: { type: ["string", "null"] } }, ["type", "skill_id"]),
};

const effortLevels = ["low", "medium", "high", "xhigh", "max"];

export const model: JsonSchema = byType({
  string: str("A model name, e.g. claude-sonnet-4-5.", { minLength: 1, maxLength: 256 }),
  object: obj(
    {
      id: str(undefined, { minLength: 1, maxLength: 256 }),
      effort: byType({ string: { enum: effortLevels }, object: tagged(effortLevels), nullable: true }),
      inference_geo: { type: ["string", "null"] },
      speed: { type: ["string", "null"], enum: ["standard", "fast", null] },
    },
    ["id"],
  ),
});

const executionIdentity = nullable(
  obj({ type: { enum: ["service_account", "aws_role"] }, role_arn: str(undefined, { maxLength: 2048 }) }, ["type"]),
);

const multiagent: JsonSchema = { type: ["object", "null"], description: "Not supported by this gateway: only null is accepted." };

export const createAgentBody: JsonSchema = obj(
  {
    model,
    name: str(undefined, { minLength: 1, maxLength: 256 }),
    description: { type: ["string", "null"], maxLength: 2048 },
    execution_identity: executionIdentity,
    mcp_servers: mcpServers,
    metadata,
    multiagent,
    skills,
    system: { type: ["string", "null"], maxLength: 100_000 },
    tools,
  },
  ["model", "name"],
);

/**
 * An agent's version, as stored (a Postgres integer): a larger one named no version and reached
 * the database, which refused it, and the caller got a 500 (found by test/fuzz/http.test.ts).
 */
const AGENT_VERSION = { type: "integer", minimum: 1, maximum: 2_147_483_647 } as const;

export const updateAgentBody: JsonSchema = obj({
  description: { type: ["string", "null"], maxLength: 2048 },
  execution_identity: executionIdentity,
  mcp_servers: nullable(mcpServers),
  metadata: metadataPatch,
  model,
  multiagent,
  name: str(undefined, { minLength: 1, maxLength: 256 }),
  skills: nullable(skills),
  system: { type: ["string", "null"], maxLength: 100_000 },
  tools: nullable(tools),
  version: { ...AGENT_VERSION, description: "The version the update applies to; a mismatch is a 409." },
});

export const agentParams = pathParams("agent_id");

export const retrieveAgentQuery = obj({ version: AGENT_VERSION });

export const listAgentsQuery = obj({ ...pageQuery, ...createdAtQuery("gte", "lte"), include_archived: { type: "boolean" } });

export const listVersionsQuery = obj({ ...pageQuery });
