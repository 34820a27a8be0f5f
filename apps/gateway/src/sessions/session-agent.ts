/**
 * The agent a session runs, as the API shows it (`session.agent`): a snapshot of one version of
 * a saved agent, with the overrides of an `agent_with_overrides` reference applied. The snapshot
 * is taken once, when the session is created; later versions of the agent do not change it.
 */
import type {
  BetaManagedAgentsAgentParams,
  BetaManagedAgentsAgentWithOverridesParams,
  BetaManagedAgentsSessionAgent,
  BetaManagedAgentsSessionAgentUpdate,
} from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import { invalidRequest } from "../errors/api-error.js";
import { resolveModel, type AgentBody, type AgentRecord } from "../agents/body.js";
import { checkMcpReferences, resolveMcpServers, resolveTools } from "../agents/tools.js";

export type AgentReference = string | BetaManagedAgentsAgentParams | BetaManagedAgentsAgentWithOverridesParams;

export interface ResolvedReference {
  readonly id: string;
  readonly version: number | undefined;
  readonly overrides: BetaManagedAgentsAgentWithOverridesParams | undefined;
}

export function readReference(ref: AgentReference): ResolvedReference {
  if (typeof ref === "string") return { id: ref, version: undefined, overrides: undefined };
  return { id: ref.id, version: ref.version, overrides: ref.type === "agent_with_overrides" ? ref : undefined };
}

function applyOverrides(body: AgentBody, o: BetaManagedAgentsAgentWithOverridesParams): AgentBody {
  if (o.skills !== undefined && o.skills.length > 0) {
    throw invalidRequest("agent.skills", "skills are not supported by this gateway yet; send an empty list or omit the field");
  }
  const next: AgentBody = {
    ...body,
    model: o.model === undefined ? body.model : resolveModel(o.model, "agent.model"),
    system: o.system === undefined ? body.system : o.system === "" ? null : o.system,
    tools: o.tools === undefined ? body.tools : resolveTools(o.tools, "agent.tools"),
    mcp_servers: o.mcp_servers === undefined ? body.mcp_servers : resolveMcpServers(o.mcp_servers, "agent.mcp_servers"),
    skills: o.skills === undefined ? body.skills : [],
  };
  checkMcpReferences(next.tools, next.mcp_servers, { tools: "agent.tools", servers: "agent.mcp_servers" });
  return next;
}

export function snapshotAgent(agent: AgentRecord, overrides: BetaManagedAgentsAgentWithOverridesParams | undefined): BetaManagedAgentsSessionAgent {
  const body = overrides === undefined ? agent.body : applyOverrides(agent.body, overrides);
  return {
    id: agent.id,
    type: "agent",
    version: agent.version,
    name: body.name,
    description: body.description,
    model: body.model,
    system: body.system,
    tools: body.tools,
    mcp_servers: body.mcp_servers,
    skills: body.skills,
    execution_identity: body.execution_identity,
    multiagent: null,
  };
}

/**
 * `sessions.update` with `agent`: the snapshot with its tools and MCP servers replaced (each a
 * full replacement; omitted: kept), checked as an agent's are. Nothing else of it changes.
 */
export function updateSnapshot(snapshot: BetaManagedAgentsSessionAgent, update: BetaManagedAgentsSessionAgentUpdate): BetaManagedAgentsSessionAgent {
  const tools = update.tools === undefined ? snapshot.tools : resolveTools(update.tools, "agent.tools");
  const servers = update.mcp_servers === undefined ? snapshot.mcp_servers : resolveMcpServers(update.mcp_servers, "agent.mcp_servers");
  checkMcpReferences(tools, servers, { tools: "agent.tools", servers: "agent.mcp_servers" });
  return { ...snapshot, tools, mcp_servers: servers };
}
