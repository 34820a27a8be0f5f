/**
 * An agent's `tools` and `mcp_servers` from request params to the resolved form the API returns:
 * every toolset's default_config and per-tool configs filled in (enabled defaults to true; the
 * permission policy to always_allow for the agent toolset and always_ask for MCP toolsets), web
 * tool filters in object form. Rules across entries (unique names, MCP server references) are
 * checked here with errors naming the field.
 */
import type {
  BetaManagedAgentsAgentToolConfig,
  BetaManagedAgentsAgentToolConfigParams,
  BetaManagedAgentsAgentToolset20260401,
  BetaManagedAgentsAgentToolset20260401Params,
  BetaManagedAgentsAlwaysAllowPolicy,
  BetaManagedAgentsAlwaysAskPolicy,
  BetaManagedAgentsAutoPolicy,
  BetaManagedAgentsCustomTool,
  BetaManagedAgentsCustomToolParams,
  BetaManagedAgentsMCPServerURLDefinition,
  BetaManagedAgentsMCPToolset,
  BetaManagedAgentsMCPToolsetParams,
  BetaManagedAgentsURLMCPServerParams,
  BetaManagedAgentsWebFetchURLSources,
  BetaManagedAgentsWebFetchURLSourcesParams,
  BetaManagedAgentsWebFetchURLSourceToolFilter,
  BetaManagedAgentsWebFetchURLSourceToolFilterParams,
} from "@anthropic-ai/sdk/resources/beta/agents/agents";
import { invalidRequest } from "../errors/api-error.js";

export type ToolParam = BetaManagedAgentsAgentToolset20260401Params | BetaManagedAgentsMCPToolsetParams | BetaManagedAgentsCustomToolParams;
export type Tool = BetaManagedAgentsAgentToolset20260401 | BetaManagedAgentsMCPToolset | BetaManagedAgentsCustomTool;
export type Policy = BetaManagedAgentsAlwaysAllowPolicy | BetaManagedAgentsAlwaysAskPolicy | BetaManagedAgentsAutoPolicy;
export type McpServer = BetaManagedAgentsMCPServerURLDefinition;

/** Anthropic counts the tools of all toolsets against this limit. */
export const MAX_TOOLS = 256;
const AGENT_TOOLSET_SIZE = 8;

interface Defaults {
  readonly enabled: boolean;
  readonly permission_policy: Policy;
}

function defaultsOf(
  params: { enabled?: boolean | null; permission_policy?: Policy | null } | null | undefined,
  policy: Policy,
): Defaults {
  return { enabled: params?.enabled ?? true, permission_policy: params?.permission_policy ?? policy };
}

function filterOf(
  value: BetaManagedAgentsWebFetchURLSourceToolFilterParams | null | undefined,
  field: string,
): BetaManagedAgentsWebFetchURLSourceToolFilter | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return { type: value };
  if ((value.type === "only" || value.type === "except") && (value.tools?.length ?? 0) === 0) {
    throw invalidRequest(`${field}.tools`, `is required (1 to 128 tools) for "${value.type}"`);
  }
  return value;
}

function urlSourcesOf(params: BetaManagedAgentsWebFetchURLSourcesParams | null | undefined, field: string): BetaManagedAgentsWebFetchURLSources | null {
  if (params === null || params === undefined) return null;
  const out = {
    client_tool_results: filterOf(params.client_tool_results, `${field}.client_tool_results`),
    server_tool_results: filterOf(params.server_tool_results, `${field}.server_tool_results`),
    user_input: filterOf(params.user_input, `${field}.user_input`),
  };
  if (out.user_input !== null && out.user_input.type !== "all" && out.user_input.type !== "none") {
    throw invalidRequest(`${field}.user_input`, 'must be "all" or "none"');
  }
  if ([out.client_tool_results, out.server_tool_results, out.user_input].every((f) => f?.type === "none")) {
    throw invalidRequest(field, 'cannot set every source to "none"');
  }
  return out as BetaManagedAgentsWebFetchURLSources;
}

function domainsOf(p: { allowed_domains?: string[]; blocked_domains?: string[] }, field: string): { allowed_domains?: string[]; blocked_domains?: string[] } {
  if (p.allowed_domains !== undefined && p.blocked_domains !== undefined) {
    throw invalidRequest(`${field}.blocked_domains`, "cannot be combined with allowed_domains");
  }
  return {
    ...(p.allowed_domains === undefined ? {} : { allowed_domains: [...p.allowed_domains] }),
    ...(p.blocked_domains === undefined ? {} : { blocked_domains: [...p.blocked_domains] }),
  };
}

function agentToolConfig(p: BetaManagedAgentsAgentToolConfigParams, defaults: Defaults, field: string): BetaManagedAgentsAgentToolConfig {
  if (p.type !== undefined && p.type !== p.name) throw invalidRequest(`${field}.type`, `must be "${p.name}" (the tool's name)`);
  const base = { enabled: p.enabled ?? defaults.enabled, permission_policy: p.permission_policy ?? defaults.permission_policy };
  switch (p.name) {
    case "web_fetch":
      return {
        name: "web_fetch",
        type: "web_fetch",
        ...base,
        ...domainsOf(p, field),
        ...(p.max_content_tokens === undefined ? {} : { max_content_tokens: p.max_content_tokens }),
        url_sources: urlSourcesOf(p.url_sources, `${field}.url_sources`),
      };
    case "web_search":
      return {
        name: "web_search",
        type: "web_search",
        ...base,
        ...domainsOf(p, field),
        ...(p.user_location === undefined ? {} : { user_location: p.user_location }),
      };
    default:
      // The six sandbox tools share one shape; `type` repeats `name`.
      return { name: p.name, type: p.name, ...base } as BetaManagedAgentsAgentToolConfig;
  }
}

function agentToolset(p: BetaManagedAgentsAgentToolset20260401Params, field: string): BetaManagedAgentsAgentToolset20260401 {
  const defaults = defaultsOf(p.default_config, { type: "always_allow" });
  const seen = new Set<string>();
  const configs = (p.configs ?? []).map((c, i) => {
    if (seen.has(c.name)) throw invalidRequest(`${field}.configs[${i}].name`, `"${c.name}" is configured twice`);
    seen.add(c.name);
    return agentToolConfig(c, defaults, `${field}.configs[${i}]`);
  });
  return { type: "agent_toolset_20260401", default_config: defaults, configs };
}

function mcpToolset(p: BetaManagedAgentsMCPToolsetParams, field: string): BetaManagedAgentsMCPToolset {
  const defaults = defaultsOf(p.default_config, { type: "always_ask" });
  const seen = new Set<string>();
  const configs = (p.configs ?? []).map((c, i) => {
    if (seen.has(c.name)) throw invalidRequest(`${field}.configs[${i}].name`, `"${c.name}" is configured twice`);
    seen.add(c.name);
    return { name: c.name, enabled: c.enabled ?? defaults.enabled, permission_policy: c.permission_policy ?? defaults.permission_policy };
  });
  return { type: "mcp_toolset", mcp_server_name: p.mcp_server_name, default_config: defaults, configs };
}

/** Resolves `tools` params; `field` prefixes error fields ("tools", "agent.tools"). */
export function resolveTools(params: readonly ToolParam[] | null | undefined, field = "tools"): Tool[] {
  const out: Tool[] = [];
  let count = 0;
  const names = new Map<string, string>();
  const claim = (name: string, at: string): void => {
    const other = names.get(name);
    if (other !== undefined) throw invalidRequest(at, `"${name}" is already the name of ${other}`);
    names.set(name, at);
  };
  for (const [i, p] of (params ?? []).entries()) {
    const at = `${field}[${i}]`;
    switch (p.type) {
      case "agent_toolset_20260401": {
        if (out.some((t) => t.type === "agent_toolset_20260401")) throw invalidRequest(`${at}.type`, "only one agent_toolset_20260401 is allowed");
        const toolset = agentToolset(p, at);
        for (const c of toolset.configs) if (c.enabled) claim(c.name, `${at}.configs`);
        count += AGENT_TOOLSET_SIZE;
        out.push(toolset);
        break;
      }
      case "mcp_toolset": {
        if (out.some((t) => t.type === "mcp_toolset" && t.mcp_server_name === p.mcp_server_name)) {
          throw invalidRequest(`${at}.mcp_server_name`, `"${p.mcp_server_name}" already has a toolset`);
        }
        const toolset = mcpToolset(p, at);
        count += Math.max(toolset.configs.length, 1);
        out.push(toolset);
        break;
      }
      case "custom":
        claim(p.name, `${at}.name`);
        count += 1;
        out.push({ type: "custom", name: p.name, description: p.description, input_schema: { ...p.input_schema } });
        break;
    }
  }
  if (count > MAX_TOOLS) throw invalidRequest(field, `holds ${count} tools, more than ${MAX_TOOLS} across all toolsets`);
  checkWebFetchReferences(out, field);
  return out;
}

/** web_fetch's client_tool_results may only name custom tools of the same agent. */
function checkWebFetchReferences(tools: readonly Tool[], field: string): void {
  const custom = new Set(tools.filter((t) => t.type === "custom").map((t) => t.name));
  for (const [i, t] of tools.entries()) {
    if (t.type !== "agent_toolset_20260401") continue;
    for (const [j, c] of t.configs.entries()) {
      const filter = c.type === "web_fetch" ? c.url_sources?.client_tool_results : null;
      if (filter?.type !== "only" && filter?.type !== "except") continue;
      for (const ref of filter.tools) {
        if (!custom.has(ref.name)) {
          throw invalidRequest(`${field}[${i}].configs[${j}].url_sources.client_tool_results`, `"${ref.name}" is not a custom tool of this agent`);
        }
      }
    }
  }
}

export function resolveMcpServers(params: readonly BetaManagedAgentsURLMCPServerParams[] | null | undefined, field = "mcp_servers"): McpServer[] {
  const seen = new Set<string>();
  return (params ?? []).map((s, i) => {
    if (seen.has(s.name)) throw invalidRequest(`${field}[${i}].name`, `"${s.name}" is used twice`);
    seen.add(s.name);
    let url: URL | undefined;
    try {
      url = new URL(s.url);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== "https:" && url.protocol !== "http:")) {
      throw invalidRequest(`${field}[${i}].url`, "must be an http or https URL");
    }
    return { type: "url", name: s.name, url: s.url };
  });
}

/** Every MCP toolset names a server of `servers`, and every server is used by a toolset. */
export function checkMcpReferences(tools: readonly Tool[], servers: readonly McpServer[], fields = { tools: "tools", servers: "mcp_servers" }): void {
  const names = new Set(servers.map((s) => s.name));
  const used = new Set<string>();
  for (const [i, t] of tools.entries()) {
    if (t.type !== "mcp_toolset") continue;
    if (!names.has(t.mcp_server_name)) {
      throw invalidRequest(`${fields.tools}[${i}].mcp_server_name`, `"${t.mcp_server_name}" is not in ${fields.servers}`);
    }
    used.add(t.mcp_server_name);
  }
  for (const [i, s] of servers.entries()) {
    if (!used.has(s.name)) throw invalidRequest(`${fields.servers}[${i}].name`, `"${s.name}" is not used by any mcp_toolset in ${fields.tools}`);
  }
}
