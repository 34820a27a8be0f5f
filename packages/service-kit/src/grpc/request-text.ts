/**
 * A decoded request's text, named as the .proto spells it: a NUL character is valid in a
 * protobuf string but no text or jsonb column stores it, and the database's refusal named no
 * field (packages/db client-errors.ts answers it as INVALID_ARGUMENT "a text value holds a NUL");
 * and the decoder's replacement characters (undecodable.ts) are found by the same walk.
 */
import { invalidArgument } from "@metaharness/errors";

/**
 * Throws INVALID_ARGUMENT naming the first string of `value`, or key of a map, that holds a NUL,
 * in protobuf names: `metadata.agent.system`, `metadata.labels[team]`. `maps` names the fields
 * (as ts-proto spells them) whose keys are the caller's: maps and google.protobuf.Struct values.
 */
export function checkNoNul(value: unknown, field: string, maps: ReadonlySet<string> = new Set()): void {
  visitText(value, field, maps, (text, at, isKey) => {
    if (!text.includes("\0")) return;
    if (isKey) throw invalidArgument(at, "a key holds a NUL character, which cannot be stored");
    throw invalidArgument(at, "holds a NUL character, which cannot be stored");
  });
}

/**
 * Calls `fn` with every string of a decoded request, and every key of its maps and Structs (the
 * field then names the entry: `labels[te\0am]`), with where it sits in protobuf names.
 */
export function visitText(
  value: unknown,
  field: string,
  maps: ReadonlySet<string>,
  fn: (text: string, field: string, isKey: boolean) => void,
): void {
  walk(value, field, false, maps, fn);
}

type Visit = (text: string, field: string, isKey: boolean) => void;

function walk(value: unknown, field: string, keyed: boolean, maps: ReadonlySet<string>, fn: Visit): void {
  if (typeof value === "string") {
    fn(value, field, false);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => walk(item, `${field}[${i}]`, keyed, maps, fn));
  } else if (value !== null && typeof value === "object" && !(value instanceof Date) && !(value instanceof Uint8Array)) {
    for (const [key, item] of Object.entries(value)) {
      if (keyed) {
        const at = `${field}[${key.replaceAll("\0", "\\0")}]`;
        fn(key, at, true);
        // Inside a Struct every level is the caller's.
        walk(item, at, true, maps, fn);
      } else if (isOneof(item)) {
        // ts-proto's oneof ({ $case, value }: oneof=unions-value in buf.gen.yaml); on the wire
        // the case is a field of this message.
        walk(item.value, join(field, item.$case), maps.has(item.$case), maps, fn);
      } else {
        walk(item, join(field, key), maps.has(key), maps, fn);
      }
    }
  }
}

function isOneof(value: unknown): value is { $case: string; value: unknown } {
  return typeof value === "object" && value !== null && typeof (value as { $case?: unknown }).$case === "string" && "value" in value;
}

function join(field: string, key: string): string {
  return field === "" ? snake(key) : `${field}.${snake(key)}`;
}

/** ts-proto's camelCase field name as the .proto spells it. */
function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
