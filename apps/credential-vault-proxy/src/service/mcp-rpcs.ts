/**
 * The harness's half of the service: list and call a session's MCP tools through the proxy.
 */
import { invalidArgument } from "@metaharness/errors";
import type { McpProxy } from "../mcp/mcp-proxy.js";
import { guarded, type GuardDeps } from "./guard.js";

export interface McpDeps extends GuardDeps {
  readonly mcp: McpProxy;
}

const TOOL_NAME = /^[A-Za-z0-9_.\-/]{1,128}$/;

export function mcpRpcs(deps: McpDeps) {
  return {
    listMcpTools: guarded("listMcpTools", deps, async (req, ctx) => ({
      tools: await deps.mcp.listTools(req.sessionId, req.mcpServerUrl, ctx.signal),
    })),
    callMcpTool: guarded("callMcpTool", deps, async (req, ctx) => {
      if (!TOOL_NAME.test(req.name)) throw invalidArgument("name", "is not an MCP tool name");
      return deps.mcp.callTool(
        { sessionId: req.sessionId, serverUrl: req.mcpServerUrl, name: req.name, args: req.arguments ?? {}, callId: req.callId },
        ctx.signal,
      );
    }),
  };
}
