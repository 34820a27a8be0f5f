/**
 * Reading untrusted JSON with errors that name the JSON field ("events[0].content[2].text").
 * Absent and null read the same for optional fields, as in the SDK's `?: T | null` params.
 */
import { invalidArgument } from "@metaharness/errors";

export type JsonObject = Readonly<Record<string, unknown>>;

export function asObject(value: unknown, field: string): JsonObject {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalidArgument(field, "must be a JSON object");
  }
  return value as JsonObject;
}

/** Refuses fields the shape does not define, so a misspelt field fails loudly. */
export function onlyKeys(object: JsonObject, allowed: readonly string[], field: string): void {
  for (const key of Object.keys(object)) {
    if (!allowed.includes(key)) throw invalidArgument(`${field}.${key}`, "is not a field of this object");
  }
}

export function requiredString(object: JsonObject, key: string, field: string): string {
  const value = object[key];
  if (typeof value !== "string") {
    throw invalidArgument(`${field}.${key}`, value === undefined || value === null ? "is required" : "must be a string");
  }
  return value;
}

/** "" when absent or null. */
export function optionalString(object: JsonObject, key: string, field: string): string {
  const value = object[key];
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") throw invalidArgument(`${field}.${key}`, "must be a string");
  return value;
}

/** false when absent or null. */
export function optionalBoolean(object: JsonObject, key: string, field: string): boolean {
  const value = object[key];
  if (value === undefined || value === null) return false;
  if (typeof value !== "boolean") throw invalidArgument(`${field}.${key}`, "must be true or false");
  return value;
}

/** [] when absent or null (only where the SDK makes the array optional). */
export function optionalArray(object: JsonObject, key: string, field: string): readonly unknown[] {
  const value = object[key];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidArgument(`${field}.${key}`, "must be an array");
  return value as readonly unknown[];
}

export function requiredArray(object: JsonObject, key: string, field: string): readonly unknown[] {
  if (object[key] === undefined || object[key] === null) throw invalidArgument(`${field}.${key}`, "is required");
  return optionalArray(object, key, field);
}
