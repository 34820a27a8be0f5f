/**
 * Builders for the events a turn appends, so the loop reads as a sequence of decisions.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { contentBlockEventId, newEvent } from "@metaharness/events";
import {
  EvaluatedPermission,
  RetryStatus,
  StopReasonType,
  type ContentBlock,
  type Event,
} from "@metaharness/proto";
import type { ToolRoute } from "../tools/catalog.js";

/** A text content list; empty output is no block at all (the log refuses empty text blocks). */
export const text = (t: string): ContentBlock[] => (t === "" ? [] : [{ block: { $case: "text", value: { text: t } } }]);

export function idle(type: StopReasonType, eventIds: string[] = []): Event {
  return newEvent("session.status_idle", { stopReason: { type, eventIds } });
}

export function running(): Event {
  return newEvent("session.status_running", {});
}

/** `exitCode`: how a command ended (bash), kept on agent.tool_result. */
export function toolResult(toolUseId: string, output: string, isError: boolean, kind: "sandbox" | "mcp" = "sandbox", exitCode?: number): Event {
  const id = `${toolUseId}.result`;
  return kind === "mcp"
    ? newEvent("agent.mcp_tool_result", { mcpToolUseId: toolUseId, content: text(output), isError }, { id })
    : newEvent("agent.tool_result", { toolUseId, content: text(output), isError, exitCode }, { id });
}

export function sessionError(type: string, message: string, retry: RetryStatus): Event {
  return newEvent("session.error", { error: { type, message, retryStatus: retry, repositoryUrl: "" } });
}

/** The events recording one complete model response, in content order, ending with the span. */
export function responseEvents(
  message: Anthropic.Message,
  startId: string,
  routes: ReadonlyMap<string, ToolRoute>,
): Event[] {
  const out: Event[] = [];
  for (const [index, block] of message.content.entries()) {
    // Blocks are named after the request and their index: what the deltas of the block were.
    const blockId = { id: contentBlockEventId(startId, index) };
    if (block.type === "thinking") {
      out.push(newEvent("agent.thinking", { thinking: block.thinking, signature: block.signature }, blockId));
    } else if (block.type === "text" && block.text !== "") {
      out.push(newEvent("agent.message", { content: text(block.text) }, blockId));
    } else if (block.type === "tool_use") {
      const route = routes.get(block.name);
      const input = (block.input ?? {}) as Record<string, unknown>;
      const permission = route?.ask === true ? EvaluatedPermission.EVALUATED_PERMISSION_ASK : EvaluatedPermission.EVALUATED_PERMISSION_ALLOW;
      // The model's tool_use id is the event id: the tool_result refers to it, and it is unique.
      const init = { id: block.id };
      if (route?.kind === "custom") out.push(newEvent("agent.custom_tool_use", { name: block.name, input }, init));
      else if (route?.kind === "mcp") {
        out.push(newEvent("agent.mcp_tool_use", { mcpServerName: route.mcpServerName ?? "mcp", name: block.name, input, evaluatedPermission: permission }, init));
      } else {
        out.push(newEvent("agent.tool_use", { name: block.name, input, evaluatedPermission: permission, sandboxId: "" }, init));
      }
    }
  }
  const u = message.usage;
  out.push(
    newEvent("span.model_request_end", {
      modelRequestStartId: startId,
      isError: false,
      modelUsage: {
        inputTokens: u.input_tokens,
        outputTokens: u.output_tokens,
        cacheCreationInputTokens: u.cache_creation_input_tokens ?? 0,
        cacheReadInputTokens: u.cache_read_input_tokens ?? 0,
      },
      stopReason: message.stop_reason ?? "",
    }),
  );
  return out;
}

export { StopReasonType, RetryStatus };
