/**
 * Reading a tool's JSON input (a google.protobuf.Struct) into typed values, with messages the
 * model can act on. Keys have aliases because two dialects reach us: the Managed Agents toolset
 * (`file_path`, `view_range`) and the shorter one (`path`, `offset`/`limit`).
 */
import { posix } from "node:path";
import { WORKSPACE } from "../inside/view.js";
import { ToolError, type Input } from "./types.js";

function pick(input: Input, keys: readonly string[]): { key: string; value: unknown } | undefined {
  for (const key of keys) {
    const value = input[key];
    if (value !== undefined && value !== null) return { key, value };
  }
  return undefined;
}

export function requiredString(tool: string, input: Input, ...keys: string[]): string {
  const found = pick(input, keys);
  if (found === undefined) throw new ToolError(`${tool}: ${keys[0]} is required`);
  if (typeof found.value !== "string") throw new ToolError(`${tool}: ${found.key} must be a string`);
  return found.value;
}

export function optionalString(tool: string, input: Input, ...keys: string[]): string | undefined {
  const found = pick(input, keys);
  if (found === undefined) return undefined;
  if (typeof found.value !== "string") throw new ToolError(`${tool}: ${found.key} must be a string`);
  return found.value;
}

export function optionalInt(tool: string, input: Input, min: number, ...keys: string[]): number | undefined {
  const found = pick(input, keys);
  if (found === undefined) return undefined;
  const v = found.value;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min) {
    throw new ToolError(`${tool}: ${found.key} must be an integer >= ${min}`);
  }
  return v;
}

export function optionalBool(tool: string, input: Input, ...keys: string[]): boolean {
  const found = pick(input, keys);
  if (found === undefined) return false;
  if (typeof found.value !== "boolean") throw new ToolError(`${tool}: ${found.key} must be true or false`);
  return found.value;
}

/** A path as the sandbox sees it: relative ones are taken from the workspace. */
export function sandboxPath(tool: string, raw: string): string {
  if (raw === "") throw new ToolError(`${tool}: the path is empty`);
  if (raw.includes("\0")) throw new ToolError(`${tool}: the path contains a NUL byte`);
  return posix.resolve(WORKSPACE, raw);
}

/** The highest line number (the sandbox helper reads them as unsigned 32-bit integers). */
const MAX_LINE = 2 ** 32 - 1;

/** `[start, end]` (1-based, inclusive, end 0 or -1: to the end) from view_range or offset/limit. */
export function lineRange(tool: string, input: Input): { start: number; end: number } | undefined {
  const range = input["view_range"];
  if (range !== undefined && range !== null) {
    if (!Array.isArray(range) || range.length !== 2 || !range.every((n) => Number.isInteger(n))) {
      throw new ToolError(`${tool}: view_range must be [start_line, end_line]`);
    }
    const [start, end] = range as [number, number];
    if (start < 1) throw new ToolError(`${tool}: view_range starts at line 1`);
    // Line numbers travel to the helper as 32-bit integers: larger ones would wrap around.
    if (start > MAX_LINE || end > MAX_LINE) throw new ToolError(`${tool}: view_range lines go up to ${MAX_LINE}`);
    if (end > 0 && end < start) throw new ToolError(`${tool}: view_range ends before it starts`);
    return { start, end: end > 0 ? end : 0 };
  }
  const offset = optionalInt(tool, input, 1, "offset");
  const limit = optionalInt(tool, input, 1, "limit");
  if (offset === undefined && limit === undefined) return undefined;
  const start = offset ?? 1;
  const end = limit === undefined ? 0 : start + limit - 1;
  if (start > MAX_LINE || end > MAX_LINE) throw new ToolError(`${tool}: offset and limit reach past line ${MAX_LINE}`);
  return { start, end };
}
