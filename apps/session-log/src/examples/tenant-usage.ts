/**
 * The figures the example usage consumer keeps per tenant (the record's mh-tenant header), from
 * the events it is given once each: token usage, model requests, and per tool its calls, results
 * and errors, whose ratio is the tool's error rate. examples/analytics-python/consumer.py computes
 * the same figures in Python, and test/integration/session-log/analytics-python.test.ts holds the
 * two to the same numbers for the same sessions: change both or neither. Pure, so it is tested
 * without Kafka.
 */
import { payloadOf } from "@metaharness/events";
import type { Event } from "@metaharness/proto";
import { addModelRequest } from "./usage.js";

export interface ToolFigures {
  calls: number;
  results: number;
  errors: number;
  /** errors / results; 0 before the first result. */
  error_rate: number;
}

export interface TenantUsage {
  /** "" for sessions without one. */
  readonly tenant: string;
  sessions: number;
  sessions_terminated: number;
  model_requests: number;
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  /** By the name the model called it by; an MCP tool as "<server>/<tool>", a result whose call was not seen as "unknown". */
  tools: Record<string, ToolFigures>;
}

/** Every tenant's figures, and what counting them needs to remember. */
export class TenantBook {
  private readonly tenants = new Map<string, TenantUsage>();
  private readonly sessions = new Set<string>();
  /** Per session, the tool calls awaiting their result: tool use id (the call's event id) -> tool name. Dropped at the session's end. */
  private readonly pending = new Map<string, Map<string, string>>();

  /** Counts `event` of a session of `tenant`; the tenant's figures when one changed. */
  count(tenant: string, event: Event): TenantUsage | undefined {
    const usage = this.tenants.get(tenant) ?? emptyTenant(tenant);
    this.tenants.set(tenant, usage);
    let changed = false;
    if (!this.sessions.has(event.sessionId)) {
      this.sessions.add(event.sessionId);
      usage.sessions += 1;
      changed = true;
    }
    const call = toolCall(event);
    const result = toolResult(event);
    const end = payloadOf(event, "span.model_request_end");
    if (end !== undefined) {
      addModelRequest(usage, end.modelUsage);
      usage.cache_creation_input_tokens += end.modelUsage?.cacheCreationInputTokens ?? 0;
      changed = true;
    } else if (call !== undefined) {
      toolOf(usage, call).calls += 1;
      const waiting = this.pending.get(event.sessionId) ?? new Map<string, string>();
      this.pending.set(event.sessionId, waiting.set(event.id, call));
      changed = true;
    } else if (result !== undefined) {
      const waiting = this.pending.get(event.sessionId);
      const tool = toolOf(usage, waiting?.get(result.useId) ?? "unknown");
      waiting?.delete(result.useId);
      tool.results += 1;
      if (result.isError) tool.errors += 1;
      tool.error_rate = tool.errors / tool.results;
      changed = true;
    } else if (event.type === "session.status_terminated") {
      usage.sessions_terminated += 1;
      this.pending.delete(event.sessionId);
      changed = true;
    }
    return changed ? usage : undefined;
  }
}

export function emptyTenant(tenant: string): TenantUsage {
  return {
    tenant,
    sessions: 0,
    sessions_terminated: 0,
    model_requests: 0,
    input_tokens: 0,
    output_tokens: 0,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    tools: {},
  };
}

function toolOf(usage: TenantUsage, name: string): ToolFigures {
  const figures = usage.tools[name] ?? { calls: 0, results: 0, errors: 0, error_rate: 0 };
  usage.tools[name] = figures;
  return figures;
}

/** The tool a call event calls, by name. */
function toolCall(event: Event): string | undefined {
  const builtIn = payloadOf(event, "agent.tool_use") ?? payloadOf(event, "agent.custom_tool_use");
  if (builtIn !== undefined) return builtIn.name;
  const mcp = payloadOf(event, "agent.mcp_tool_use");
  return mcp === undefined ? undefined : `${mcp.mcpServerName}/${mcp.name}`;
}

/** The call a result event answers, and whether it failed. */
function toolResult(event: Event): { useId: string; isError: boolean } | undefined {
  const builtIn = payloadOf(event, "agent.tool_result");
  if (builtIn !== undefined) return { useId: builtIn.toolUseId, isError: builtIn.isError };
  const mcp = payloadOf(event, "agent.mcp_tool_result");
  if (mcp !== undefined) return { useId: mcp.mcpToolUseId, isError: mcp.isError };
  const custom = payloadOf(event, "user.custom_tool_result");
  return custom === undefined ? undefined : { useId: custom.customToolUseId, isError: custom.isError };
}
