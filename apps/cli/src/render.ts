/**
 * One line per event for a terminal: seq, type and the part of the payload a person wants to see.
 */
import { toManagedAgentsJson } from "@metaharness/events";
import type { Event } from "@metaharness/proto";

const MAX_TEXT = 100;

function clip(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > MAX_TEXT ? `${flat.slice(0, MAX_TEXT - 1)}…` : flat;
}

function contentText(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return content
    .map((b: unknown) => (typeof b === "object" && b !== null && "text" in b ? String((b).text) : ""))
    .join(" ");
}

export function summarize(event: Event): string {
  const json = toManagedAgentsJson(event) as Record<string, unknown>;
  switch (event.type) {
    case "user.message":
    case "agent.message":
      return clip(contentText(json["content"]));
    case "agent.tool_use":
    case "agent.custom_tool_use":
      return `${String(json["name"])} ${clip(JSON.stringify(json["input"]))}`;
    case "agent.tool_result":
      return `${json["is_error"] === true ? "error: " : ""}${clip(contentText(json["content"]))}`;
    case "session.status_idle":
      return `stop_reason=${JSON.stringify(json["stop_reason"])}`;
    case "span.model_request_end":
      return `usage=${JSON.stringify(json["model_usage"])}`;
    default:
      return "";
  }
}

export function formatEvent(event: Event): string {
  const seq = String(event.seq).padStart(4, " ");
  return `${seq}  ${event.type.padEnd(26, " ")} ${summarize(event)}`;
}
