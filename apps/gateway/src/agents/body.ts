/**
 * An agent's configurable fields, from create and update params to the stored (resolved) form,
 * and the agent object the API returns. Updates follow the SDK's rules: an omitted field is kept,
 * null (or an empty value, where the SDK says so) clears it, metadata is a patch, arrays are
 * replaced whole. What this gateway cannot honour is refused with a 400 naming the field rather
 * than stored and ignored: skills, multiagent, an aws_role execution identity.
 */
import type {
  AgentCreateParams,
  AgentUpdateParams,
  BetaManagedAgentsAgent,
  BetaManagedAgentsExecutionIdentity,
  BetaManagedAgentsExecutionIdentityParams,
  BetaManagedAgentsModel,
  BetaManagedAgentsModelConfig,
  BetaManagedAgentsModelConfigParams,
  BetaManagedAgentsSkillParams,
} from "@anthropic-ai/sdk/resources/beta/agents/agents";
import { invalidRequest } from "../errors/api-error.js";
import { contextConfig } from "./context-config.js";
import { checkMetadata, patchMetadata } from "../http/metadata.js";
import { checkMcpReferences, resolveMcpServers, resolveTools } from "./tools.js";

export type AgentCreateBody = Omit<AgentCreateParams, "betas" | "workspace_id">;
export type AgentUpdateBody = Omit<AgentUpdateParams, "betas" | "workspace_id">;

/** What a version of an agent holds; the rest of the agent object is bookkeeping. */
export type AgentBody = Pick<
  BetaManagedAgentsAgent,
  "name" | "description" | "model" | "system" | "tools" | "mcp_servers" | "skills" | "metadata" | "multiagent" | "execution_identity"
>;

export interface AgentRecord {
  readonly id: string;
  readonly version: number;
  readonly createdAt: Date;
  /** When this version was made. */
  readonly updatedAt: Date;
  readonly archivedAt: Date | null;
  readonly body: AgentBody;
}

export function resolveModel(params: BetaManagedAgentsModel | BetaManagedAgentsModelConfigParams, field = "model"): BetaManagedAgentsModelConfig {
  if (typeof params === "string") return { id: params };
  if (params.id === "") throw invalidRequest(`${field}.id`, "must not be empty");
  const effort = params.effort;
  return {
    id: params.id,
    ...(effort === null || effort === undefined ? {} : { effort: typeof effort === "string" ? { type: effort } : effort }),
    ...(params.inference_geo === null || params.inference_geo === undefined ? {} : { inference_geo: params.inference_geo }),
    ...(params.speed === null || params.speed === undefined ? {} : { speed: params.speed }),
  };
}

function refuseSkills(skills: readonly BetaManagedAgentsSkillParams[] | null | undefined, field = "skills"): [] {
  if (skills !== null && skills !== undefined && skills.length > 0) {
    throw invalidRequest(field, "skills are not supported by this gateway yet; send an empty list or omit the field");
  }
  return [];
}

function refuseMultiagent(multiagent: unknown): null {
  if (multiagent !== null && multiagent !== undefined) {
    throw invalidRequest("multiagent", "multiagent orchestration is not supported by this gateway yet; send null or omit the field");
  }
  return null;
}

function executionIdentity(params: BetaManagedAgentsExecutionIdentityParams | null | undefined): BetaManagedAgentsExecutionIdentity {
  if (params?.type === "aws_role") {
    throw invalidRequest("execution_identity.type", "aws_role is not supported by this gateway; use service_account");
  }
  return { type: "service_account" };
}

/** `""` and null both read as "no value" where the SDK says so (description, system). */
function textOrNull(value: string | null | undefined): string | null {
  return value === undefined || value === null || value === "" ? null : value;
}

function checked(body: AgentBody): AgentBody {
  checkMcpReferences(body.tools, body.mcp_servers);
  contextConfig(body.metadata);
  return body;
}

export function agentBodyFromCreate(p: AgentCreateBody): AgentBody {
  return checked({
    name: p.name,
    description: textOrNull(p.description),
    model: resolveModel(p.model),
    system: textOrNull(p.system),
    tools: resolveTools(p.tools),
    mcp_servers: resolveMcpServers(p.mcp_servers),
    skills: refuseSkills(p.skills),
    metadata: checkMetadata(p.metadata ?? {}),
    multiagent: refuseMultiagent(p.multiagent),
    execution_identity: executionIdentity(p.execution_identity),
  });
}

export function applyAgentUpdate(current: AgentBody, p: AgentUpdateBody): AgentBody {
  return checked({
    name: p.name ?? current.name,
    description: p.description === undefined ? current.description : textOrNull(p.description),
    model: p.model === undefined ? current.model : resolveModel(p.model),
    system: p.system === undefined ? current.system : textOrNull(p.system),
    tools: p.tools === undefined ? current.tools : resolveTools(p.tools),
    mcp_servers: p.mcp_servers === undefined ? current.mcp_servers : resolveMcpServers(p.mcp_servers),
    skills: p.skills === undefined ? current.skills : refuseSkills(p.skills),
    metadata: patchMetadata(current.metadata, p.metadata),
    multiagent: p.multiagent === undefined ? current.multiagent : refuseMultiagent(p.multiagent),
    execution_identity: p.execution_identity === undefined ? current.execution_identity : executionIdentity(p.execution_identity),
  });
}

export function renderAgent(record: AgentRecord): BetaManagedAgentsAgent {
  return {
    id: record.id,
    type: "agent",
    ...record.body,
    version: record.version,
    created_at: record.createdAt.toISOString(),
    updated_at: record.updatedAt.toISOString(),
    archived_at: record.archivedAt?.toISOString() ?? null,
  };
}
