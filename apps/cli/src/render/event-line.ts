/**
 * One line per stored event, for `mh sessions events` and `mh sessions tail`: seq, time, type and
 * the part of the event a person wants to see. Reads the SDK's event objects (plus our seq and
 * sandbox.* events), so it works against any deployment of the API.
 */
import type { StreamEvent } from "../client/follow.js";
import { clip, count } from "./style.js";
import { contentText } from "./tools.js";

type Loose = Record<string, unknown>;

const str = (e: Loose, key: string): string => (typeof e[key] === "string" ? e[key] : "");
const obj = (e: Loose, key: string): Loose => (typeof e[key] === "object" && e[key] !== null ? (e[key] as Loose) : {});

export function eventSummary(event: StreamEvent, width = 100): string {
  const e = event as unknown as Loose;
  switch (event.type as string) {
    case "user.message":
    case "agent.message":
      return clip(contentText(e["content"]), width);
    case "agent.tool_use":
    case "agent.mcp_tool_use":
    case "agent.custom_tool_use":
      return `${str(e, "name")} ${clip(JSON.stringify(e["input"] ?? {}), width)}`;
    case "agent.tool_result":
    case "agent.mcp_tool_result":
    case "user.custom_tool_result":
    case "user.tool_result":
      return `${e["is_error"] === true ? "error: " : ""}${clip(contentText(e["content"]), width)}`;
    case "user.tool_confirmation":
      return `${str(e, "result")} ${str(e, "tool_use_id")}`;
    case "session.status_idle":
      return `stop_reason=${str(obj(e, "stop_reason"), "type")}`;
    case "session.error": {
      const error = obj(e, "error");
      return clip(`${str(error, "type")}: ${str(error, "message")} (${str(obj(error, "retry_status"), "type")})`, width);
    }
    case "span.model_request_start":
      return str(e, "model");
    case "span.model_request_end": {
      const u = obj(e, "model_usage");
      const n = (k: string) => count(typeof u[k] === "number" ? u[k] : 0);
      return `in ${n("input_tokens")} out ${n("output_tokens")} cache_read ${n("cache_read_input_tokens")}${str(e, "stop_reason") === "" ? "" : ` ${str(e, "stop_reason")}`}`;
    }
    case "sandbox.provisioned":
      return `${str(e, "sandbox_id")} ${str(e, "driver")} ${typeof e["duration_ms"] === "number" ? e["duration_ms"] : "?"} ms`;
    case "sandbox.released":
    case "sandbox.lost":
      return `${str(e, "sandbox_id")} ${str(e, "reason")}`;
    default:
      return "";
  }
}

/** "  12  14:03:07.412  agent.tool_use             bash {"command":"ls"}" */
export function formatEvent(event: StreamEvent, width = 100): string {
  const e = event as unknown as Loose;
  const seq = typeof e["seq"] === "number" ? String(e["seq"]) : "-";
  const at = str(e, "processed_at");
  const time = at.length >= 23 ? at.slice(11, 23) : at.padEnd(12, " ");
  return `${seq.padStart(5, " ")}  ${time}  ${event.type.padEnd(26, " ")} ${eventSummary(event, width)}`;
}
