/**
 * Stored events as `mh sessions events` and `mh sessions tail` print them: a head line per event
 * (seq, time, type and the part of the event a person wants to see) that never runs past the
 * terminal's width, so a narrow terminal does not wrap it into the next; a message's text follows
 * on its own lines, wrapped at word boundaries, instead of being cut. Colours (by kind of event)
 * only where the Output allows them. Reads the SDK's event objects (plus our seq and sandbox.*
 * events), so it works against any deployment of the API.
 */
import type { BetaManagedAgentsStreamSessionEvents as StreamEvent } from "@anthropic-ai/sdk/resources/beta/sessions/events";
import { clip, count, printable, style as makeStyle, type Style } from "./style.js";
import { contentText, toolLabel } from "./tools.js";

type Loose = Record<string, unknown>;

const str = (e: Loose, key: string): string => (typeof e[key] === "string" ? e[key] : "");
const obj = (e: Loose, key: string): Loose => (typeof e[key] === "object" && e[key] !== null ? (e[key] as Loose) : {});

/** Columns of the type in the head line; a longer type takes what it needs from the summary. */
const TYPE_WIDTH = 24;
/** A message's text is indented under the head line by this much. */
const TEXT_INDENT = "      ";
/** Lines of one message's text printed at most (`--json` prints it whole). */
export const MAX_TEXT_LINES = 60;

/** The one-line summary of an event in `width` columns (a message's is empty: its text follows). */
export function eventSummary(event: StreamEvent, width = 100): string {
  const e = event as unknown as Loose;
  switch (event.type as string) {
    case "agent.tool_use":
    case "agent.mcp_tool_use":
    case "agent.custom_tool_use":
      return toolLabel(str(e, "name"), obj(e, "input"), width);
    case "agent.tool_result":
    case "agent.mcp_tool_result":
    case "user.custom_tool_result":
    case "user.tool_result":
      return resultSummary(contentText(e["content"]), e["is_error"] === true, width);
    case "user.tool_confirmation":
      return clip(`${str(e, "result")} ${str(e, "tool_use_id")}`, width);
    case "session.status_idle":
      return clip(`stop_reason=${str(obj(e, "stop_reason"), "type")}`, width);
    case "session.error": {
      const error = obj(e, "error");
      return clip(`${str(error, "type")}: ${str(error, "message")} (${str(obj(error, "retry_status"), "type")})`, width);
    }
    case "span.model_request_start":
      return clip(str(e, "model"), width);
    case "span.model_request_end": {
      const u = obj(e, "model_usage");
      const n = (k: string) => count(typeof u[k] === "number" ? u[k] : 0);
      const failed = e["is_error"] === true ? "failed · " : "";
      // "in" is every input token the model read; the API's input_tokens counts those outside the cache only.
      const input = ["input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"].reduce((sum, k) => sum + (typeof u[k] === "number" ? u[k] : 0), 0);
      return clip(`${failed}in ${count(input)} (cache ${n("cache_read_input_tokens")} read, ${n("cache_creation_input_tokens")} written) out ${n("output_tokens")}${str(e, "stop_reason") === "" ? "" : ` ${str(e, "stop_reason")}`}`, width);
    }
    case "session.usage": {
      const cents = (amount: Loose): string => (str(amount, "amount") === "" ? "" : `$${(Number(str(amount, "amount")) / 100).toFixed(2)}`);
      const cost = cents(obj(obj(e, "usage"), "list_cost"));
      const budget = cents(obj(obj(e, "budget"), "max_list_cost"));
      return clip(`list cost ${cost || "unpriced"}${budget === "" ? "" : ` of a ${budget} budget`}`, width);
    }
    case "session.updated":
      return clip(["budget", "title", "metadata", "agent"].filter((k) => k in e).join(", "), width);
    case "sandbox.provisioned":
      return clip(`${str(e, "sandbox_id")} ${str(e, "driver")} ${typeof e["duration_ms"] === "number" ? e["duration_ms"] : "?"} ms`, width);
    case "sandbox.released":
    case "sandbox.lost":
      return clip(`${str(e, "sandbox_id")} ${str(e, "reason")}`, width);
    default:
      return "";
  }
}

/** A tool's output as its first line, and how many more there are. */
function resultSummary(text: string, isError: boolean, width: number): string {
  const lines = printable(text).replace(/\n+$/, "").split("\n");
  const more = lines.length > 1 ? ` (+${lines.length - 1} lines)` : "";
  const head = `${isError ? "error: " : ""}${lines[0] ?? ""}`;
  return width - more.length < 10 ? clip(head, width) : `${clip(head, width - more.length)}${more}`;
}

/** How the type of an event is coloured: what a person scans for stands out, bookkeeping recedes. */
function typeColour(event: StreamEvent, s: Style): (text: string) => string {
  const e = event as unknown as Loose;
  switch (event.type as string) {
    case "user.message":
      return (t) => s.bold(s.cyan(t));
    case "agent.message":
      return s.bold;
    case "agent.tool_use":
    case "agent.mcp_tool_use":
    case "agent.custom_tool_use":
      return s.yellow;
    case "agent.tool_result":
    case "agent.mcp_tool_result":
    case "user.custom_tool_result":
    case "user.tool_result":
      return e["is_error"] === true ? s.red : s.green;
    case "session.error":
    case "sandbox.lost":
      return s.red;
    case "span.model_request_end":
      return e["is_error"] === true ? s.red : s.dim;
    default:
      return s.dim;
  }
}

/** `text` in lines of at most `width` characters, broken between words (a longer word is split). */
export function wrap(text: string, width: number): string[] {
  const w = Math.max(width, 10);
  const out: string[] = [];
  for (const paragraph of printable(text).replace(/\t/g, "  ").replace(/\s+$/, "").split("\n")) {
    let line = "";
    for (const word of paragraph.trimEnd().split(/ +/)) {
      if (line !== "" && line.length + 1 + word.length > w) {
        out.push(line);
        line = "";
      }
      let rest = word;
      while (rest.length > w) {
        if (line !== "") out.push(line);
        out.push(rest.slice(0, w));
        line = "";
        rest = rest.slice(w);
      }
      line = line === "" ? rest : `${line} ${rest}`;
    }
    out.push(line);
  }
  return out;
}

/**
 * "   12 14:03:07.412 agent.tool_use           bash  ls -la", at most `width` columns; a message
 * adds its text below, wrapped to the same width.
 */
export function formatEvent(event: StreamEvent, width = 100, s: Style = makeStyle(false)): string {
  const e = event as unknown as Loose;
  const seq = typeof e["seq"] === "number" ? String(e["seq"]) : "-";
  const at = str(e, "processed_at");
  const time = at.length >= 23 ? at.slice(11, 23) : at.padEnd(12, " ");
  const type = event.type.padEnd(TYPE_WIDTH, " ");
  const lead = `${seq.padStart(5, " ")} ${time} `;
  const room = width - lead.length - type.length - 1;
  const summary = room > 0 ? eventSummary(event, room) : "";
  const head = summary === "" ? `${s.dim(lead)}${typeColour(event, s)(event.type)}` : `${s.dim(lead)}${typeColour(event, s)(type)} ${summary}`;
  if (event.type !== "user.message" && event.type !== "agent.message") return head;
  const lines = wrap(contentText(e["content"]), width - TEXT_INDENT.length);
  const shown = lines.length > MAX_TEXT_LINES ? [...lines.slice(0, MAX_TEXT_LINES - 1), s.dim(`… ${lines.length - MAX_TEXT_LINES + 1} more lines (--json prints all)`)] : lines;
  return [head, ...shown.map((l) => (l === "" ? "" : `${TEXT_INDENT}${l}`))].join("\n");
}
