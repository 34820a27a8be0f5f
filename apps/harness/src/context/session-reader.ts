/**
 * The windowed strategy's built-in tool: `read_session_events` gives the model positional slices
 * of its own session log, so what fell out of the window can be re-read before it acts on it.
 * The rendering is compact text, one event per entry, each led by its seq so the model can page
 * (after_seq / before_seq). Output is bounded per event and per call; the footer says where to
 * continue.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { isEventType, toManagedAgentsJson } from "@metaharness/events";
import type { ContentBlock, Event } from "@metaharness/proto";
import type { LogPort } from "../log-port.js";

export const READ_TOOL_NAME = "read_session_events";
export const DEFAULT_READ_LIMIT = 20;
export const MAX_READ_LIMIT = 100;
/** One event's text is cut here; a whole answer stops growing here. */
export const MAX_EVENT_CHARS = 2_000;
export const MAX_OUTPUT_CHARS = 8_000;

export const READ_TOOL: Anthropic.Tool = {
  name: READ_TOOL_NAME,
  description:
    "Read events of this session's log, including ones no longer shown in your context window. " +
    "Each line starts with the event's seq. Use after_seq to read forward from a point (after_seq: 0 reads from the start), " +
    "before_seq to read the events just before a point, both for a range. Optionally filter by event types " +
    '(e.g. ["user.message", "agent.message", "agent.tool_use", "agent.tool_result"]). Re-read before acting on old information.',
  input_schema: {
    type: "object",
    properties: {
      after_seq: { type: "integer", minimum: 0, description: "Read events with seq > after_seq, oldest first." },
      before_seq: { type: "integer", minimum: 1, description: "Read the events with seq < before_seq (the last `limit` of them)." },
      limit: { type: "integer", minimum: 1, maximum: MAX_READ_LIMIT, description: `How many events (default ${DEFAULT_READ_LIMIT}).` },
      types: { type: "array", items: { type: "string" }, description: "Only events of these types." },
    },
    required: [],
  },
};

export interface ReadRequest {
  readonly afterSeq: number | undefined;
  readonly beforeSeq: number | undefined;
  readonly limit: number;
  readonly types: string[];
}

export type Outcome = { readonly output: string; readonly isError: boolean };

/** The tool's input, checked; a string says everything that is wrong with it. */
export function parseReadRequest(input: Record<string, unknown>): ReadRequest | string {
  const problems: string[] = [];
  const integer = (key: string, min: number): number | undefined => {
    const v = input[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v === "number" && Number.isSafeInteger(v) && v >= min) return v;
    problems.push(`${key} must be an integer >= ${min}`);
    return undefined;
  };
  const afterSeq = integer("after_seq", 0);
  const beforeSeq = integer("before_seq", 1);
  const limit = Math.min(integer("limit", 1) ?? DEFAULT_READ_LIMIT, MAX_READ_LIMIT);
  const raw = input["types"] ?? [];
  const types = Array.isArray(raw) && raw.every((t): t is string => typeof t === "string") ? raw : undefined;
  if (types === undefined) problems.push("types must be an array of strings");
  const unknown = (types ?? []).filter((t) => !isEventType(t));
  if (unknown.length > 0) problems.push(`unknown event types: ${unknown.join(", ")}`);
  if (problems.length > 0 || types === undefined) return problems.join("; ");
  return { afterSeq, beforeSeq, limit, types };
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (+${text.length - max} chars)`;
}

function contentText(content: readonly ContentBlock[]): string {
  return content.map((c) => (c.block?.$case === "text" ? c.block.value.text : `[${c.block?.$case ?? "empty"}]`)).join("\n");
}

/** The interesting part of an event, as one string. */
function summary(event: Event): string {
  const p = event.payload;
  switch (p?.$case) {
    case "userMessage":
    case "agentMessage":
      return contentText(p.value.content);
    case "agentThinking":
      return p.value.thinking;
    case "agentToolUse":
    case "agentMcpToolUse":
    case "agentCustomToolUse":
      return `${p.value.name} ${JSON.stringify(p.value.input ?? {})} (tool_use_id ${event.id})`;
    case "agentToolResult":
    case "userToolResult":
      return `${p.value.isError ? "error " : ""}for ${p.value.toolUseId}: ${contentText(p.value.content)}`;
    case "agentMcpToolResult":
      return `${p.value.isError ? "error " : ""}for ${p.value.mcpToolUseId}: ${contentText(p.value.content)}`;
    case "userCustomToolResult":
      return `${p.value.isError ? "error " : ""}for ${p.value.customToolUseId}: ${contentText(p.value.content)}`;
    case undefined:
      return "";
    default: {
      const { id: _id, type: _type, processed_at: _at, seq: _seq, session_id: _session, ...body } = toManagedAgentsJson(event);
      return Object.keys(body).length === 0 ? "" : JSON.stringify(body);
    }
  }
}

export function renderEvent(event: Event): string {
  const text = clip(summary(event), MAX_EVENT_CHARS).replaceAll("\n", "\n    ");
  return `#${event.seq} ${event.type}${text === "" ? "" : `: ${text}`}`;
}

/**
 * Renders a page of events within MAX_OUTPUT_CHARS, with a footer saying how to go on. `more`:
 * the log holds more events in the read's direction (its has_more: a slice can also end short of
 * the limit, at the log's byte budget). `beforeSeq`: a forward read's upper bound, kept in the
 * footer's next call.
 */
export function renderPage(events: readonly Event[], backward: boolean, more: boolean, beforeSeq?: number): string {
  if (events.length === 0) return "(no events in that range)";
  const lines: string[] = [];
  let size = 0;
  for (const e of events) {
    const line = renderEvent(e);
    if (lines.length > 0 && size + line.length > MAX_OUTPUT_CHARS) break;
    lines.push(line);
    size += line.length + 1;
  }
  const first = events[0]!.seq;
  const last = events[lines.length - 1]!.seq;
  const onward = `{"after_seq": ${last}${beforeSeq === undefined ? "" : `, "before_seq": ${beforeSeq}`}}`;
  if (lines.length < events.length) {
    lines.push(`(output cut at ${MAX_OUTPUT_CHARS} characters: continue with ${onward})`);
  } else if (more) {
    lines.push(backward ? `(earlier events exist: {"before_seq": ${first}})` : `(more events follow: ${onward})`);
  }
  return lines.join("\n");
}

/** Answers a read_session_events call from the log. */
export async function readSessionEvents(input: Record<string, unknown>, log: LogPort): Promise<Outcome> {
  const req = parseReadRequest(input);
  if (typeof req === "string") return { output: `invalid input: ${req}`, isError: true };
  const { afterSeq, beforeSeq, limit, types } = req;
  if (afterSeq === undefined && beforeSeq !== undefined) {
    const { events, hasMore } = await log.slice({ beforeSeq }, limit, types);
    return { output: renderPage(events, true, hasMore), isError: false };
  }
  const fetched = await log.slice({ afterSeq: afterSeq ?? 0 }, limit, types);
  const events = beforeSeq === undefined ? fetched.events : fetched.events.filter((e) => e.seq < beforeSeq);
  // Events cut by before_seq, or a page ending just before it, mean the range was read to its end.
  const last = events[events.length - 1]?.seq ?? 0;
  const more = events.length === fetched.events.length && fetched.hasMore && (beforeSeq === undefined || last < beforeSeq - 1);
  return { output: renderPage(events, false, more, beforeSeq), isError: false };
}
