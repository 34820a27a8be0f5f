/**
 * A session's agent, as the API shows it, onto the AgentConfig the harness runs (snapshotted in
 * the session log's metadata):
 * - model.id and system as they are;
 * - the agent toolset's enabled sandbox tools (bash, read, write, edit, glob, grep) as sandbox
 *   tools with their permission policy; `auto` is not judged per call yet and runs as
 *   always_ask, the safe side. web_fetch and web_search have no executor here and are left out;
 * - custom tools as client tools with their schema;
 * - MCP toolsets: each explicitly configured, enabled tool as an MCP tool of its server's URL
 *   (listing a server's tools is the credential proxy's work, not yet done).
 */
import type { BetaManagedAgentsSessionAgent } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import { PermissionPolicy, ToolKind, type AgentConfig, type BudgetLimit, type ModelPrice, type ToolConfig } from "@metaharness/proto";
import { SANDBOX_TOOL_NAMES } from "./schemas.js";
import { contextConfig, type ContextConfig } from "./context-config.js";
import type { Policy } from "./tools.js";

const SANDBOX: ReadonlySet<string> = new Set(SANDBOX_TOOL_NAMES);

export function permissionOf(policy: Policy): PermissionPolicy {
  return policy.type === "always_allow" ? PermissionPolicy.PERMISSION_POLICY_ALWAYS_ALLOW : PermissionPolicy.PERMISSION_POLICY_ALWAYS_ASK;
}

function tool(name: string, kind: ToolKind, policy: Policy, extra: Partial<ToolConfig> = {}): ToolConfig {
  return { name, kind, description: "", inputSchema: undefined, permissionPolicy: permissionOf(policy), mcpServerUrl: "", ...extra };
}

export function toolConfigs(agent: BetaManagedAgentsSessionAgent): ToolConfig[] {
  const out: ToolConfig[] = [];
  const servers = new Map(agent.mcp_servers.map((s) => [s.name, s.url]));
  for (const t of agent.tools) {
    switch (t.type) {
      case "agent_toolset_20260401":
        for (const name of SANDBOX_TOOL_NAMES) {
          const config = t.configs.find((c) => c.name === name);
          const enabled = config?.enabled ?? t.default_config.enabled;
          if (enabled) out.push(tool(name, ToolKind.TOOL_KIND_SANDBOX, config?.permission_policy ?? t.default_config.permission_policy));
        }
        break;
      case "custom":
        out.push(
          tool(t.name, ToolKind.TOOL_KIND_CUSTOM, { type: "always_allow" }, { description: t.description, inputSchema: { ...t.input_schema } }),
        );
        break;
      case "mcp_toolset":
        for (const c of t.configs) {
          if (c.enabled && !SANDBOX.has(c.name)) {
            out.push(
              tool(c.name, ToolKind.TOOL_KIND_MCP, c.permission_policy, { mcpServerUrl: servers.get(t.mcp_server_name) ?? "", mcpServerName: t.mcp_server_name }),
            );
          }
        }
        break;
    }
  }
  return out;
}

/** What the session's usage is priced with, and the budget it was created with (sessions/budget.ts). */
export interface SpendConfig {
  readonly listPrice?: ModelPrice | undefined;
  readonly budget?: BudgetLimit | undefined;
}

/** `context`: the agent's context management (context-config.ts), compaction by default. */
export function toAgentConfig(agent: BetaManagedAgentsSessionAgent, context: ContextConfig = contextConfig({}), spend: SpendConfig = {}): AgentConfig {
  return {
    model: agent.model.id,
    system: agent.system ?? "",
    tools: toolConfigs(agent),
    tokenBudget: 0,
    contextStrategy: context.contextStrategy,
    contextWindowTokens: context.contextWindowTokens,
    maxTokens: 0,
    // The Managed Agents tool list is exact: an agent without tools gets none.
    explicitTools: true,
    listPrice: spend.listPrice,
    budget: spend.budget,
  };
}
