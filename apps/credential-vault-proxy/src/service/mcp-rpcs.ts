/**
 * The harness's half of the service: list and call a session's MCP tools through the proxy. A
 * call is made at most once per (session, call_id): mcp/call-ledger.ts.
 */
import { invalidArgument } from "@metaharness/errors";
import type { McpCallLedger } from "../mcp/call-ledger.js";
import type { McpProxy } from "../mcp/mcp-proxy.js";
import { guarded, type GuardDeps } from "./guard.js";
import { countMcpCall } from "../metrics.js";

export interface McpDeps extends GuardDeps {
  readonly mcp: McpProxy;
  readonly ledger: McpCallLedger;
}

const TOOL_NAME = /^[A-Za-z0-9_.\-/]{1,128}$/;
/** Any id of the caller's that names one call: the harness sends its tool-use event's id. */
const CALL_ID = /^[\x21-\x7e]{1,256}$/;

export function mcpRpcs(deps: McpDeps) {
  return {
    listMcpTools: guarded("listMcpTools", deps, async (req, ctx) => ({
      tools: await deps.mcp.listTools(req.sessionId, req.mcpServerUrl, ctx.signal),
    })),
    callMcpTool: guarded("callMcpTool", deps, async (req, ctx) => {
      if (!TOOL_NAME.test(req.name)) throw invalidArgument("name", "is not an MCP tool name");
      if (!CALL_ID.test(req.callId)) throw invalidArgument("call_id", "is required: 1-256 printable characters naming this call (the tool-use event id)");
      const call = { sessionId: req.sessionId, serverUrl: req.mcpServerUrl, name: req.name, args: req.arguments ?? {}, callId: req.callId };
      try {
        const { outcome, replayed } = await deps.ledger.run(call, ctx.signal, (signal, sent) => deps.mcp.callTool(call, signal, sent));
        countMcpCall();
        return { text: outcome.text, isError: outcome.isError, replayed };
      } catch (err) {
        countMcpCall(err);
        throw err;
      }
    }),
  };
}
