/**
 * The line-delimited JSON protocol between the external-process harness and its agent (version 1;
 * described in full in ../external-process.ts). This file is the boundary: what the harness sends
 * is typed here, and every line the agent prints is parsed and checked here into a closed union,
 * or rejected with an AgentProcessError naming what was wrong.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { newEvent, validateEventForAppend, type ManagedAgentsEventJson } from "@metaharness/events";
import { MhError } from "@metaharness/errors";
import type { Event } from "@metaharness/proto";
import { AgentProcessError } from "./errors.js";

export const PROTOCOL_VERSION = 1;
/** An agent's event is refused above this encoded size (the log's own bound is 1 MiB). */
const MAX_EMIT_BYTES = 512 * 1024;

/** Harness -> agent. */
export type HarnessMessage =
  | {
      readonly type: "start";
      readonly protocol: typeof PROTOCOL_VERSION;
      readonly session_id: string;
      readonly agent: string;
      readonly system: string;
      readonly tools: readonly Anthropic.Tool[];
    }
  | { readonly type: "events"; readonly events: readonly ManagedAgentsEventJson[] }
  | {
      readonly type: "tool_result";
      readonly id: string;
      readonly tool_use_id: string;
      readonly content: string;
      readonly is_error: boolean;
    };

/** Agent -> harness, checked. */
export type AgentLine =
  | { readonly type: "emit"; readonly event: Event }
  | { readonly type: "tool"; readonly id: string; readonly name: string; readonly input: Record<string, unknown> }
  | { readonly type: "idle"; readonly stopReason: string; readonly usage: { readonly inputTokens: number; readonly outputTokens: number } };

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const fail = (why: string): AgentProcessError => new AgentProcessError("protocol", why);

function str(obj: Json, key: string, at: string, opts: { optional?: boolean; max?: number } = {}): string {
  const v = obj[key];
  if (v === undefined && opts.optional === true) return "";
  if (typeof v !== "string") throw fail(`${at}.${key} must be a string`);
  if (v.length > (opts.max ?? Number.MAX_SAFE_INTEGER)) throw fail(`${at}.${key} is longer than ${opts.max} characters`);
  return v;
}

function count(obj: Json, key: string, at: string): number {
  const v = obj[key] ?? 0;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) throw fail(`${at}.${key} must be an integer >= 0`);
  return v;
}

/** The events an agent may write: its messages and its thinking. Tool calls go through "tool". */
function parseEmitted(raw: unknown): Event {
  if (!isObject(raw)) throw fail("emit.event must be an object");
  const type = str(raw, "type", "emit.event");
  let event: Event;
  if (type === "agent.message") {
    const content = raw["content"];
    if (!Array.isArray(content) || content.length === 0) throw fail("emit.event.content must be a non-empty array");
    const blocks = content.map((b: unknown, i) => {
      if (!isObject(b) || b["type"] !== "text") throw fail(`emit.event.content[${i}] must be a text block`);
      return { block: { $case: "text" as const, value: { text: str(b, "text", `emit.event.content[${i}]`) } } };
    });
    event = newEvent("agent.message", { content: blocks });
  } else if (type === "agent.thinking") {
    event = newEvent("agent.thinking", { thinking: str(raw, "thinking", "emit.event", { optional: true }), signature: "" });
  } else {
    throw fail(`emit.event.type "${type}" cannot be emitted by an agent (agent.message or agent.thinking)`);
  }
  try {
    return validateEventForAppend(event, { maxPayloadBytes: MAX_EMIT_BYTES, field: "emit.event" }).event;
  } catch (err) {
    throw fail(MhError.from(err).message);
  }
}

/** Parses one line the agent printed. */
export function parseAgentLine(line: string): AgentLine {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    throw fail(`not a JSON line: ${JSON.stringify(line.slice(0, 120))}`);
  }
  if (!isObject(raw)) throw fail("a line must be a JSON object");
  const type = raw["type"];
  switch (type) {
    case "emit":
      return { type, event: parseEmitted(raw["event"]) };
    case "tool": {
      const input = raw["input"] ?? {};
      if (!isObject(input)) throw fail("tool.input must be an object");
      return { type, id: str(raw, "id", "tool", { max: 256 }), name: str(raw, "name", "tool", { max: 128 }), input };
    }
    case "idle": {
      const usage = raw["usage"] ?? {};
      if (!isObject(usage)) throw fail("idle.usage must be an object");
      return {
        type,
        stopReason: str(raw, "stop_reason", "idle", { optional: true, max: 64 }) || "end_turn",
        usage: { inputTokens: count(usage, "input_tokens", "idle.usage"), outputTokens: count(usage, "output_tokens", "idle.usage") },
      };
    }
    default:
      throw fail(`unknown line type ${JSON.stringify(type)} (expected emit, tool or idle)`);
  }
}

export function encode(message: HarnessMessage): string {
  return `${JSON.stringify(message)}\n`;
}
