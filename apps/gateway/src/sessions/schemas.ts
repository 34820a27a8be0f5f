/**
 * Request schemas of /v1/sessions, after the SDK's SessionCreateParams, SessionUpdateParams and
 * SessionListParams (resources/beta/sessions/sessions.d.ts).
 */
import { mcpServers, model, skills, tools } from "../agents/schemas.js";
import { createdAtQuery, metadata, metadataPatch, nullable, obj, pageQuery, pathParams, str, type JsonSchema } from "../http/json-schema.js";

const agentRef: JsonSchema = {
  if: { type: "string" },
  then: str("An agent id: its latest version.", { minLength: 1 }),
  else: {
    type: "object",
    required: ["type"],
    discriminator: { propertyName: "type" },
    oneOf: [
      obj({ type: { const: "agent" }, id: str(), version: { type: "integer", minimum: 1 } }, ["type", "id"]),
      obj(
        {
          type: { const: "agent_with_overrides" },
          id: str(),
          version: { type: "integer", minimum: 1 },
          model,
          system: { type: ["string", "null"], maxLength: 100_000 },
          tools,
          mcp_servers: mcpServers,
          skills,
        },
        ["type", "id"],
      ),
    ],
  },
};

const checkout: JsonSchema = nullable({
  type: "object",
  required: ["type"],
  discriminator: { propertyName: "type" },
  oneOf: [
    obj({ type: { const: "branch" }, name: str(undefined, { minLength: 1, maxLength: 255 }) }, ["type", "name"]),
    obj({ type: { const: "commit" }, sha: str(undefined, { pattern: "^[0-9a-fA-F]{7,64}$" }) }, ["type", "sha"]),
  ],
});

const mountPath: JsonSchema = { type: ["string", "null"], maxLength: 1024 };

export const resourceBody: JsonSchema = {
  type: "object",
  required: ["type"],
  discriminator: { propertyName: "type" },
  oneOf: [
    obj(
      {
        type: { const: "github_repository" },
        url: str(undefined, { minLength: 1, maxLength: 2048 }),
        authorization_token: str("Goes to the credential vault proxy (a git_token of the session's own vault); never stored by the gateway nor returned.", {
          minLength: 1,
          maxLength: 4096,
        }),
        checkout,
        mount_path: mountPath,
      },
      ["type", "url"],
    ),
    obj({ type: { const: "file" }, file_id: str(), mount_path: mountPath }, ["type", "file_id"]),
    obj(
      {
        type: { const: "memory_store" },
        memory_store_id: str(),
        access: { type: ["string", "null"], enum: ["read_write", "read_only", null] },
        instructions: { type: ["string", "null"], maxLength: 4096 },
      },
      ["type", "memory_store_id"],
    ),
  ],
};

/** BetaManagedAgentsBudgetLimit: a ceiling on the session's list cost, in minor units of USD. */
const budget: JsonSchema = obj(
  {
    type: { const: "limit" },
    max_list_cost: obj(
      {
        amount: str("Minor units (cents) as a decimal string without leading zeros: \"2500\" is $25.00.", { pattern: "^(0|[1-9][0-9]{0,15})$" }),
        currency: { const: "USD" },
      },
      ["amount", "currency"],
    ),
  },
  ["type", "max_list_cost"],
);

export const MAX_INITIAL_EVENTS = 50;
/** Resources of one session (the session log's bound on its repositories). */
export const MAX_RESOURCES = 64;

export const createSessionBody: JsonSchema = obj(
  {
    agent: agentRef,
    environment_id: str(undefined, { minLength: 1 }),
    budget,
    initial_events: {
      type: "array",
      maxItems: MAX_INITIAL_EVENTS,
      items: { type: "object", required: ["type"], properties: { type: str() } },
    },
    metadata,
    resources: { type: "array", maxItems: MAX_RESOURCES, items: resourceBody },
    title: { type: ["string", "null"], maxLength: 1024 },
    vault_ids: { type: "array", maxItems: 64, items: str(undefined, { minLength: 1, maxLength: 128 }) },
  },
  ["agent", "environment_id"],
);

export const updateSessionBody: JsonSchema = obj({
  agent: obj({ tools, mcp_servers: mcpServers }, [], { description: "Replacement tools and MCP servers of the session's agent; only while it is not running." }),
  budget: nullable(budget),
  metadata: metadataPatch,
  title: { type: ["string", "null"], maxLength: 1024 },
  vault_ids: { type: "array", items: str(), description: "Refused, as Anthropic's API does: not yet supported." },
});

export const sessionParams = pathParams("session_id");
export const resourceParams = pathParams("session_id", "resource_id");

export const updateResourceBody: JsonSchema = obj(
  { authorization_token: str("The new token (github_repository resources): replaces the old one at once.", { minLength: 1, maxLength: 4096 }) },
  ["authorization_token"],
);

export const listResourcesQuery = obj({ ...pageQuery });

export const SESSION_STATUSES = ["rescheduling", "running", "idle", "terminated"] as const;

export const listSessionsQuery = obj({
  ...pageQuery,
  ...createdAtQuery("gt", "gte", "lt", "lte"),
  agent_id: str(),
  agent_version: { type: "integer", minimum: 1 },
  deployment_id: str("No session of this gateway has a deployment: a filter on it matches nothing."),
  include_archived: { type: "boolean" },
  memory_store_id: str("Memory stores are not served: a filter on one matches nothing."),
  order: { enum: ["asc", "desc"] },
  statuses: { type: "array", items: { enum: SESSION_STATUSES } },
});
