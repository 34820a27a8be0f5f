/**
 * A decoded request's text, checked before it reaches Postgres: a NUL character is valid in a
 * protobuf string but no text or jsonb column stores it, and the database's refusal named no
 * field (packages/db client-errors.ts answers it as INVALID_ARGUMENT "a text value holds a NUL").
 */
import { invalidArgument } from "@metaharness/errors";

/**
 * Throws INVALID_ARGUMENT naming the first string of `value`, or key of a map, that holds a NUL,
 * in protobuf names: `metadata.agent.system`, `metadata.labels[team]`. `maps` names the fields
 * (as ts-proto spells them) whose keys are the caller's: maps and google.protobuf.Struct values.
 */
export function checkNoNul(value: unknown, field: string, maps: ReadonlySet<string> = new Set()): void {
  walk(value, field, false, maps);
}

function walk(value: unknown, field: string, keyed: boolean, maps: ReadonlySet<string>): void {
  if (typeof value === "string") {
    if (value.includes("\0")) throw invalidArgument(field, "holds a NUL character, which cannot be stored");
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => walk(item, `${field}[${i}]`, keyed, maps));
  } else if (value !== null && typeof value === "object" && !(value instanceof Date) && !(value instanceof Uint8Array)) {
    for (const [key, item] of Object.entries(value)) {
      if (keyed) {
        if (key.includes("\0")) throw invalidArgument(`${field}[${key.replaceAll("\0", "\\0")}]`, "a key holds a NUL character, which cannot be stored");
        // Inside a Struct every level is the caller's.
        walk(item, `${field}[${key}]`, true, maps);
      } else if (isOneof(item)) {
        // ts-proto's oneof ({ $case, value }: oneof=unions-value in buf.gen.yaml); on the wire
        // the case is a field of this message.
        walk(item.value, join(field, item.$case), maps.has(item.$case), maps);
      } else {
        walk(item, join(field, key), maps.has(key), maps);
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
