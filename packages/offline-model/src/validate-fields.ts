/**
 * Field checks shared by the request validators. Each throws a 400 naming the field by its dotted
 * path (`messages.1.content.0.text`) in the real API's pydantic-flavoured wording, so a harness bug
 * reads the same here as it would against the real API.
 */
import { invalidRequest } from "./api-error.js";

export type JsonObject = Readonly<Record<string, unknown>>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function path(parent: string, key: string | number): string {
  return parent === "" ? String(key) : `${parent}.${key}`;
}

export function requireObject(value: unknown, at: string): JsonObject {
  if (!isObject(value)) throw invalidRequest(at, "Input should be a valid dictionary");
  return value;
}

export function requireArray(value: unknown, at: string): readonly unknown[] {
  if (!Array.isArray(value)) throw invalidRequest(at, "Input should be a valid list");
  return value;
}

export function requireString(obj: JsonObject, key: string, at: string): string {
  const value = obj[key];
  if (value === undefined) throw invalidRequest(path(at, key), "Field required");
  if (typeof value !== "string") throw invalidRequest(path(at, key), "Input should be a valid string");
  return value;
}

export function requireInt(
  obj: JsonObject,
  key: string,
  at: string,
  range: { readonly min?: number; readonly max?: number } = {},
): number {
  const value = obj[key];
  const where = path(at, key);
  if (value === undefined) throw invalidRequest(where, "Field required");
  if (typeof value !== "number" || !Number.isInteger(value)) throw invalidRequest(where, "Input should be a valid integer");
  if (range.min !== undefined && value < range.min) {
    throw invalidRequest(where, `Input should be greater than or equal to ${range.min}`);
  }
  if (range.max !== undefined && value > range.max) {
    throw invalidRequest(where, `Input should be less than or equal to ${range.max}`);
  }
  return value;
}

export function optionalNumber(obj: JsonObject, key: string, at: string, min: number, max: number): void {
  const value = obj[key];
  if (value === undefined || value === null) return;
  const where = path(at, key);
  if (typeof value !== "number" || Number.isNaN(value)) throw invalidRequest(where, "Input should be a valid number");
  if (value < min) throw invalidRequest(where, `Input should be greater than or equal to ${min}`);
  if (value > max) throw invalidRequest(where, `Input should be less than or equal to ${max}`);
}

export function optionalBool(obj: JsonObject, key: string, at: string): void {
  const value = obj[key];
  if (value !== undefined && value !== null && typeof value !== "boolean") {
    throw invalidRequest(path(at, key), "Input should be a valid boolean");
  }
}

/** `one of` in the real API's words: `Input should be 'user' or 'assistant'`. */
export function requireOneOf<const V extends string>(obj: JsonObject, key: string, at: string, values: readonly V[]): V {
  const value = requireString(obj, key, at);
  if ((values as readonly string[]).includes(value)) return value as V;
  const quoted = values.map((v) => `'${v}'`);
  const choices = quoted.length <= 2 ? quoted.join(" or ") : `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1) ?? ""}`;
  throw invalidRequest(path(at, key), `Input should be ${choices}`);
}

/** Counts and checks a block's `cache_control`; returns 1 when the block is a breakpoint. */
export function checkCacheControl(obj: JsonObject, at: string): number {
  const value = obj["cache_control"];
  if (value === undefined || value === null) return 0;
  const where = path(at, "cache_control");
  const control = requireObject(value, where);
  requireOneOf(control, "type", where, ["ephemeral"]);
  if (control["ttl"] !== undefined) requireOneOf(control, "ttl", where, ["5m", "1h"]);
  return 1;
}
