/**
 * The figures the example usage consumer keeps per session, from the events it is given once
 * each, in order: the model's token usage (span.model_request_end), the tool calls the agent
 * made, and the last status. Pure, so it is tested without Kafka.
 */
import { payloadOf } from "@metaharness/events";
import type { Event, ModelUsage } from "@metaharness/proto";

export interface SessionUsage {
  readonly session_id: string;
  /** The last event counted. */
  seq: number;
  model_requests: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  tool_calls: number;
  /** "running", "idle", "terminated", or "" before the first status event. */
  status: string;
}

const TOOL_CALLS = new Set(["agent.tool_use", "agent.mcp_tool_use", "agent.custom_tool_use"]);
const STATUSES: Readonly<Record<string, string>> = {
  "session.status_running": "running",
  "session.status_idle": "idle",
  "session.status_terminated": "terminated",
};

export function emptyUsage(sessionId: string): SessionUsage {
  return { session_id: sessionId, seq: 0, model_requests: 0, input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, tool_calls: 0, status: "" };
}

/** Counts `event` into `usage`; true when a figure changed. */
export function countEvent(usage: SessionUsage, event: Event): boolean {
  usage.seq = event.seq;
  const end = payloadOf(event, "span.model_request_end");
  if (end !== undefined) {
    addModelRequest(usage, end.modelUsage);
    return true;
  }
  if (TOOL_CALLS.has(event.type)) {
    usage.tool_calls += 1;
    return true;
  }
  const status = STATUSES[event.type];
  if (status !== undefined && status !== usage.status) {
    usage.status = status;
    return true;
  }
  return false;
}

/** Figures that count model requests and their tokens (a session's here, a tenant's in tenant-usage.ts). */
export interface ModelFigures {
  model_requests: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
}

/** Counts one model request and its usage into `figures`. */
export function addModelRequest(figures: ModelFigures, usage: ModelUsage | undefined): void {
  figures.model_requests += 1;
  figures.input_tokens += usage?.inputTokens ?? 0;
  figures.output_tokens += usage?.outputTokens ?? 0;
  figures.cache_read_input_tokens += usage?.cacheReadInputTokens ?? 0;
}
