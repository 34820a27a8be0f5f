/**
 * Just enough of a .proto parser for the tests that hold the registry and docs/events.md against
 * proto/metaharness/v1/event.proto itself, not against generated code that may be stale.
 */
import { readFileSync } from "node:fs";

export interface ProtoField {
  readonly name: string;
  /** As written: "string", "repeated ContentBlock" is type "ContentBlock" with repeated. */
  readonly type: string;
  readonly repeated: boolean;
}

export interface PayloadField {
  /** The oneof field, e.g. "agent_tool_use". */
  readonly field: string;
  /** Its message, e.g. "AgentToolUse". */
  readonly message: string;
}

export interface ParsedProto {
  readonly messages: ReadonlyMap<string, readonly ProtoField[]>;
  /** The fields of `oneof payload` in message Event, in order. */
  readonly payload: readonly PayloadField[];
}

/** The repository's proto/ directory, found from this file (src/ or dist/ of packages/events). */
export const EVENT_PROTO_URL = new URL("../../../../proto/metaharness/v1/event.proto", import.meta.url);

const FIELD = /^\s*(repeated\s+)?([\w.]+)\s+(\w+)\s*=\s*\d+\s*;/;

export function readEventProto(): ParsedProto {
  return parseProto(readFileSync(EVENT_PROTO_URL, "utf8"));
}

export function parseProto(source: string): ParsedProto {
  const text = source.replace(/\/\/[^\n]*/g, "");
  const messages = new Map<string, ProtoField[]>();
  let payload: PayloadField[] = [];
  for (const match of text.matchAll(/\bmessage\s+(\w+)\s*\{/g)) {
    const name = match[1] ?? "";
    const body = blockAfter(text, (match.index ?? 0) + match[0].length);
    messages.set(name, fieldsOf(body));
    if (name === "Event") {
      const oneof = /\boneof\s+payload\s*\{/.exec(body);
      if (oneof === null) throw new Error("event.proto: message Event has no oneof payload");
      payload = fieldsOf(blockAfter(body, oneof.index + oneof[0].length)).map((f) => ({
        field: f.name,
        message: f.type,
      }));
    }
  }
  return { messages, payload };
}

/** The text up to the brace that closes the one opened just before `start`. */
function blockAfter(text: string, start: number): string {
  let depth = 1;
  for (let i = start; i < text.length; i++) {
    if (text[i] === "{") depth++;
    if (text[i] === "}" && --depth === 0) return text.slice(start, i);
  }
  throw new Error("event.proto: unbalanced braces");
}

function fieldsOf(body: string): ProtoField[] {
  return body.split(/[\n;]/).flatMap((line) => {
    const m = FIELD.exec(`${line};`);
    return m === null ? [] : [{ name: m[3] ?? "", type: m[2] ?? "", repeated: m[1] !== undefined }];
  });
}
