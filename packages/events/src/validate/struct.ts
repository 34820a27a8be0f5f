/**
 * Validation of tool inputs (google.protobuf.Struct, held by ts-proto as a plain object). The
 * depth bound is not cosmetic: ts-proto's decoder refuses messages nested more than 100 deep, and
 * every object level of a Struct costs three (Struct, its map entry, Value) under the two of
 * Event and the tool-use message. An event the log accepted but could not read back would poison
 * the session, so inputs deeper than the decoder can take are refused on append.
 */
import { invalidArgument } from "@metaharness/errors";

/** The deepest nesting of objects and arrays a tool input may have (the input itself is 1). */
export const MAX_INPUT_DEPTH = 32;

export function validateStruct(input: unknown, field: string): void {
  if (input === undefined) return;
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw invalidArgument(field, "must be a JSON object");
  }
  walk(input, field, 1);
}

function walk(value: unknown, field: string, depth: number): void {
  switch (typeof value) {
    case "undefined":
    case "string":
    case "boolean":
      return;
    case "number":
      if (!Number.isFinite(value)) throw invalidArgument(field, "must be a finite number");
      return;
    case "object":
      break;
    default:
      throw invalidArgument(field, `is a ${typeof value}, which JSON cannot hold`);
  }
  if (value === null) return;
  if (depth > MAX_INPUT_DEPTH) throw invalidArgument(field, `nests deeper than ${MAX_INPUT_DEPTH} levels`);
  if (Array.isArray(value)) {
    value.forEach((item: unknown, i) => walk(item, `${field}[${i}]`, depth + 1));
    return;
  }
  for (const [key, item] of Object.entries(value)) walk(item, `${field}.${key}`, depth + 1);
}
