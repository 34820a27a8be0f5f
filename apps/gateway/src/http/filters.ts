/**
 * The `created_at[...]` filters of list endpoints: RFC 3339 timestamps, refused with a 400 naming
 * the parameter when they do not parse.
 */
import { invalidRequest } from "../errors/api-error.js";

export type TimeOp = "gt" | "gte" | "lt" | "lte";

export function timeFilter(query: Readonly<Record<string, unknown>>, op: TimeOp): Date | undefined {
  const key = `created_at[${op}]`;
  const raw = query[key];
  if (raw === undefined) return undefined;
  const ms = typeof raw === "string" ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(ms)) throw invalidRequest(key, "must be an RFC 3339 timestamp");
  return new Date(ms);
}
