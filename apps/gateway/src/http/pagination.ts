/**
 * Page cursors as the SDK's PageCursor and BidirectionalPageCursor use them: the response's
 * `next_page` (and `prev_page`) is an opaque string the SDK sends back as `?page=`. Ours is
 * base64url JSON of a keyset position — [created_at, id] for objects, a seq for events — tagged
 * with the list it belongs to, so a cursor from another list, or a forged one, is a 400 naming
 * `page` rather than a wrong page.
 */
import { invalidRequest } from "../errors/api-error.js";

export type Direction = "next" | "prev";

export interface Cursor<P> {
  readonly position: P;
  readonly direction: Direction;
}

interface Wire {
  readonly l: string;
  readonly d: Direction;
  readonly p: unknown;
}

export function encodeCursor<P>(list: string, position: P, direction: Direction = "next"): string {
  const wire: Wire = { l: list, d: direction, p: position };
  return Buffer.from(JSON.stringify(wire)).toString("base64url");
}

/** Reads `?page=`; `isPosition` checks the position's shape. Absent or empty: the first page. */
export function decodeCursor<P>(
  list: string,
  raw: string | null | undefined,
  isPosition: (p: unknown) => p is P,
): Cursor<P> | undefined {
  if (raw === undefined || raw === null || raw === "") return undefined;
  let wire: unknown;
  try {
    wire = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"));
  } catch {
    wire = undefined;
  }
  const w = wire as Partial<Wire> | undefined;
  if (typeof w !== "object" || w === null || w.l !== list || (w.d !== "next" && w.d !== "prev") || !isPosition(w.p)) {
    throw invalidRequest("page", "is not a page cursor of this list (pass next_page or prev_page as returned)");
  }
  return { position: w.p, direction: w.d };
}

/** [created_at ISO, id]: the keyset position of objects listed by creation time. */
export type TimeIdPosition = readonly [string, string];

export function isTimeIdPosition(p: unknown): p is TimeIdPosition {
  return (
    Array.isArray(p) &&
    p.length === 2 &&
    typeof p[0] === "string" &&
    !Number.isNaN(Date.parse(p[0])) &&
    typeof p[1] === "string" &&
    p[1].length <= 128
  );
}

export function isSeqPosition(p: unknown): p is number {
  return typeof p === "number" && Number.isSafeInteger(p) && p >= 0;
}

export interface LimitRule {
  readonly default: number;
  readonly max: number;
}

/** Page sizes: objects 20 by default (at most 100); events 1000 (the log's largest slice). */
export const OBJECT_PAGE: LimitRule = { default: 20, max: 100 };
export const EVENT_PAGE: LimitRule = { default: 1000, max: 1000 };

export function pageLimit(value: number | undefined, rule: LimitRule): number {
  if (value === undefined) return rule.default;
  if (!Number.isSafeInteger(value) || value < 1 || value > rule.max) {
    throw invalidRequest("limit", `must be an integer from 1 to ${rule.max}`);
  }
  return value;
}
