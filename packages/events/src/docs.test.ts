/**
 * Keeps docs/events.md in step with event.proto and this package: every type of the oneof has a
 * section, every section a type, every payload field (and the fields of the event.proto messages
 * it holds) is named in its section, and every example is what toManagedAgentsJson serves.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { fromManagedAgentsParams } from "./json/from-json.js";
import { toManagedAgentsJson } from "./json/to-json.js";
import { EVENT_TYPES, isEventType } from "./registry.js";
import { storedEvent } from "./testing/fixtures.js";
import { readEventProto, type ParsedProto } from "./testing/proto-text.js";

const DOC_URL = new URL("../../../docs/events.md", import.meta.url);

interface Section {
  readonly type: string;
  readonly text: string;
  /** Every `backticked` token of the section. */
  readonly names: ReadonlySet<string>;
  readonly example: Record<string, unknown>;
}

function readSections(): Section[] {
  const lines = readFileSync(DOC_URL, "utf8").split("\n");
  const sections: Section[] = [];
  let current: { type: string; lines: string[] } | undefined;
  const close = (): void => {
    if (current === undefined) return;
    const text = current.lines.join("\n");
    const json = /```json\n([\s\S]*?)\n```/.exec(text)?.[1];
    if (json === undefined) throw new Error(`docs/events.md: section ${current.type} has no json example`);
    const names = new Set([...text.matchAll(/`([^`\s]+)`/g)].map((m) => m[1] ?? ""));
    sections.push({ type: current.type, text, names, example: JSON.parse(json) as Record<string, unknown> });
    current = undefined;
  };
  for (const line of lines) {
    const heading = /^###\s+`([^`]+)`\s*$/.exec(line);
    if (heading !== null || line.startsWith("## ") || line.startsWith("### ")) close();
    if (heading !== null) current = { type: heading[1] ?? "", lines: [] };
    else current?.lines.push(line);
  }
  close();
  return sections;
}

/** The field names a type's section must mention: "content", "stop_reason.event_ids", ... */
function documentedFields(proto: ParsedProto, message: string, prefix = ""): string[] {
  return (proto.messages.get(message) ?? []).flatMap((field) => {
    const name = prefix + field.name;
    const nested = proto.messages.has(field.type) ? documentedFields(proto, field.type, `${name}.`) : [];
    return [name, ...nested];
  });
}

const proto = readEventProto();
const sections = readSections();
const byType = new Map(sections.map((s) => [s.type, s]));
const typeOfField = (field: string): string => field.replace("_", ".");

describe("docs/events.md", () => {
  it("has one section per type of event.proto, and no other", () => {
    const protoTypes = proto.payload.map((p) => typeOfField(p.field));
    expect(sections.map((s) => s.type).sort()).toEqual([...protoTypes].sort());
    expect(byType.size).toBe(sections.length);
    expect([...EVENT_TYPES].sort()).toEqual([...protoTypes].sort());
  });

  it("names every payload field of a type in its section", () => {
    const missing = proto.payload.flatMap(({ field, message }) => {
      const section = byType.get(typeOfField(field));
      return documentedFields(proto, message)
        .filter((name) => section?.names.has(name) !== true)
        .map((name) => `${typeOfField(field)}: ${name}`);
    });
    expect(missing).toEqual([]);
  });

  it("says who emits each type", () => {
    const silent = sections.filter((s) => !/\*\*Emitted by:\*\* (client|harness|broker|gateway)/.test(s.text));
    expect(silent.map((s) => s.type)).toEqual([]);
  });

  it("shows examples with the fields toManagedAgentsJson serves", () => {
    for (const section of sections) {
      expect(section.example.type, section.type).toBe(section.type);
      if (!isEventType(section.type)) throw new Error(`unknown type ${section.type}`);
      const served = Object.keys(toManagedAgentsJson(storedEvent(section.type))).sort();
      expect(Object.keys(section.example).sort(), section.type).toEqual(served);
    }
  });

  it("shows user.* examples that parse and render back unchanged", () => {
    for (const section of sections.filter((s) => s.type.startsWith("user."))) {
      const { processed_at, seq, session_id, ...params } = section.example;
      const event = {
        ...fromManagedAgentsParams(params),
        seq: Number(seq),
        sessionId: String(session_id),
        createdAt: new Date(String(processed_at)),
      };
      expect(toManagedAgentsJson(event), section.type).toEqual(section.example);
    }
  });
});
