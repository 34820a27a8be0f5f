/**
 * The tools the model is offered. Sandbox tools (bash, read, write, edit, glob, grep, provision)
 * have built-in schemas and go to the sandbox broker; custom tools come from the session's agent
 * configuration and go to the client. Every tool's kind and permission policy is decided here,
 * once, from the configuration snapshotted in the session. In a self-hosted environment the
 * sandbox tools run on the environment's worker, with the official toolset's inputs and no
 * `provision` (a worker is one machine).
 */
import type Anthropic from "@anthropic-ai/sdk";
import { PermissionPolicy, ToolKind, type AgentConfig, type HandTool } from "@metaharness/proto";

export type RouteKind = "sandbox" | "custom" | "mcp";

/**
 * Who runs the session's sandbox tools: the sandbox broker (cloud environments), or the workers
 * of a self-hosted environment, which answer each agent.tool_use with a user.tool_result.
 */
export type Hands = "broker" | "worker";

export interface ToolRoute {
  readonly name: string;
  readonly kind: RouteKind;
  readonly ask: boolean;
  readonly definition: Anthropic.Tool;
  /** MCP tools: the server the credential proxy calls (ToolConfig.mcp_server_url). */
  readonly mcpServerUrl?: string;
  /** MCP tools: the server's name in agent.mcp_tool_use (its URL's host; ToolConfig has no name). */
  readonly mcpServerName?: string;
  /** A hand's own tool: the hand kind whose sandbox runs it (EnvironmentConfig.hand_kind). */
  readonly handKind?: string;
}

const sandboxId = { type: "string", description: "Which of your sandboxes to use (from provision); the default one if omitted." };

const object = (properties: Record<string, unknown>, required: string[]): Anthropic.Tool.InputSchema => ({
  type: "object",
  properties: { ...properties, sandbox_id: sandboxId },
  required,
});

export const SANDBOX_TOOLS: readonly Anthropic.Tool[] = [
  {
    name: "bash",
    description: "Run a bash command in the sandbox's /workspace. Returns stdout and stderr.",
    input_schema: object({ command: { type: "string" }, timeout_ms: { type: "integer" } }, ["command"]),
  },
  {
    name: "read",
    description: "Read a file of the sandbox, with line numbers.",
    input_schema: object({ path: { type: "string" }, offset: { type: "integer" }, limit: { type: "integer" } }, ["path"]),
  },
  {
    name: "write",
    description: "Write a file of the sandbox, replacing it.",
    input_schema: object({ path: { type: "string" }, content: { type: "string" } }, ["path", "content"]),
  },
  {
    name: "edit",
    description: "Replace old_string by new_string in a file of the sandbox.",
    input_schema: object(
      { path: { type: "string" }, old_string: { type: "string" }, new_string: { type: "string" }, replace_all: { type: "boolean" } },
      ["path", "old_string", "new_string"],
    ),
  },
  {
    name: "glob",
    description: "List files of the sandbox matching a glob pattern.",
    input_schema: object({ pattern: { type: "string" }, path: { type: "string" } }, ["pattern"]),
  },
  {
    name: "grep",
    description: "Search file contents of the sandbox with a regular expression.",
    input_schema: object({ pattern: { type: "string" }, path: { type: "string" }, glob: { type: "string" } }, ["pattern"]),
  },
  {
    name: "provision",
    description:
      "Provision an additional sandbox (you get one automatically on your first sandbox tool call). Returns its sandbox_id.",
    input_schema: {
      type: "object",
      properties: {
        memory_mb: { type: "integer" },
        cpu_millis: { type: "integer" },
        lifetime_seconds: { type: "integer" },
      },
      required: [],
    },
  },
];

const schema = (properties: Record<string, unknown>, required: string[]): Anthropic.Tool.InputSchema => ({ type: "object", properties, required });

/**
 * agent_toolset_20260401 as a worker runs it: the inputs of the official SDK's
 * betaAgentToolset20260401, which EnvironmentWorker runs by default.
 */
export const WORKER_TOOLS: readonly Anthropic.Tool[] = [
  {
    name: "bash",
    description: "Run a bash command in a persistent shell on the environment's machine. State (cwd, env vars) persists across calls.",
    input_schema: schema({ command: { type: "string" }, restart: { type: "boolean" }, timeout_ms: { type: "integer" } }, []),
  },
  {
    name: "read",
    description: "Read a UTF-8 text file relative to the workdir.",
    input_schema: schema({ file_path: { type: "string" }, view_range: { type: "array", items: { type: "integer" } } }, ["file_path"]),
  },
  {
    name: "write",
    description: "Write a UTF-8 text file relative to the workdir, creating parent directories as needed.",
    input_schema: schema({ file_path: { type: "string" }, content: { type: "string" } }, ["file_path", "content"]),
  },
  {
    name: "edit",
    description: "Replace old_string with new_string in a file. old_string must be unique unless replace_all.",
    input_schema: schema(
      { file_path: { type: "string" }, old_string: { type: "string" }, new_string: { type: "string" }, replace_all: { type: "boolean" } },
      ["file_path", "old_string", "new_string"],
    ),
  },
  {
    name: "glob",
    description: "Match files under the workdir against a glob pattern.",
    input_schema: schema({ pattern: { type: "string" }, path: { type: "string" } }, ["pattern"]),
  },
  {
    name: "grep",
    description: "Search file contents for a regex.",
    input_schema: schema({ pattern: { type: "string" }, path: { type: "string" } }, ["pattern"]),
  },
];

const SANDBOX_NAMES = new Set(SANDBOX_TOOLS.map((t) => t.name));

export function isSandboxTool(name: string): boolean {
  return SANDBOX_NAMES.has(name);
}

/** The routes of a session: its configured tools, or every sandbox tool when none is configured. */
export function toolRoutes(agent: AgentConfig | undefined, hands: Hands = "broker"): Map<string, ToolRoute> {
  const routes = new Map<string, ToolRoute>();
  const sandboxTools = hands === "worker" ? WORKER_TOOLS : SANDBOX_TOOLS;
  const configured = agent?.tools ?? [];
  if (configured.length === 0 && agent?.explicitTools !== true) {
    for (const definition of sandboxTools) routes.set(definition.name, { name: definition.name, kind: "sandbox", ask: false, definition });
    return routes;
  }
  for (const tool of configured) {
    // Fails closed: a policy this version does not know asks, as always_ask does.
    const ask = tool.permissionPolicy !== PermissionPolicy.PERMISSION_POLICY_ALWAYS_ALLOW && tool.permissionPolicy !== PermissionPolicy.PERMISSION_POLICY_UNSPECIFIED;
    if (tool.kind === ToolKind.TOOL_KIND_SANDBOX || (tool.kind === ToolKind.TOOL_KIND_UNSPECIFIED && isSandboxTool(tool.name))) {
      const definition = sandboxTools.find((t) => t.name === tool.name);
      if (definition !== undefined) routes.set(tool.name, { name: tool.name, kind: "sandbox", ask, definition });
      continue;
    }
    const definition: Anthropic.Tool = {
      name: tool.name,
      description: tool.description,
      input_schema: { type: "object", ...(tool.inputSchema ?? {}) },
    };
    if (tool.kind === ToolKind.TOOL_KIND_MCP) {
      const mcpServerName = tool.mcpServerName || (URL.canParse(tool.mcpServerUrl) ? new URL(tool.mcpServerUrl).host : "mcp");
      routes.set(tool.name, { name: tool.name, kind: "mcp", ask, definition, mcpServerUrl: tool.mcpServerUrl, mcpServerName });
    }
    else routes.set(tool.name, { name: tool.name, kind: "custom", ask, definition });
  }
  return routes;
}

/**
 * Adds a hand kind's own tools (ListHandTools) to the routes, run like sandbox tools on a sandbox
 * of that kind; a name the session already routes keeps its route. The names added.
 */
export function addHandRoutes(routes: Map<string, ToolRoute>, kind: string, tools: readonly HandTool[]): string[] {
  const added: string[] = [];
  for (const t of tools) {
    if (routes.has(t.name)) continue;
    const definition: Anthropic.Tool = { name: t.name, description: t.description, input_schema: { ...(t.inputSchema ?? {}), type: "object" } };
    routes.set(t.name, { name: t.name, kind: "sandbox", ask: false, definition, handKind: kind });
    added.push(t.name);
  }
  return added;
}
