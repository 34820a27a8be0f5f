/**
 * Positional reads. Every slice is one index range scan on (session_id, seq) (or
 * (session_id, type, seq) when filtered by type) bounded by LIMIT, so reading 100 events costs the
 * same in a session of 100 events as in one of a million. The session's head comes back from the
 * same statement, so callers see a consistent snapshot of "what exists up to last_seq". Bodies
 * are stored exactly as served, so GetEvents sends them without decoding (readStoredSlice).
 */
import type { Queryable } from "@metaharness/db";
import { Event, type SessionStatus } from "@metaharness/proto";
import { notFound } from "./sessions.js";

export const MAX_SLICE = 1000;
export const DEFAULT_SLICE = 100;

/** What a slice says of its session, read in the same statement as its events. */
export interface SliceHead {
  /** The session's last seq when the slice was read. */
  readonly lastSeq: number;
  /** More matching events lie beyond the slice in the direction read. */
  readonly hasMore: boolean;
  /** The session's status when the slice was read. */
  readonly status: SessionStatus;
}

export interface Slice extends SliceHead {
  readonly events: Event[];
}

/** A slice as stored: each event's encoded metaharness.v1.Event, in seq order. */
export interface StoredSlice extends SliceHead {
  readonly bodies: Uint8Array[];
}

export interface SliceRequest {
  readonly sessionId: string;
  readonly direction: "after" | "before";
  /** Exclusive bound: seq > position (after) or seq < position (before). */
  readonly position: number;
  readonly limit: number;
  readonly types: readonly string[];
}

interface SliceRow {
  last_seq: string;
  status: SessionStatus;
  body: Uint8Array | null;
}

export async function readSlice(db: Queryable, req: SliceRequest): Promise<Slice> {
  const { bodies, ...head } = await readStoredSlice(db, req);
  return { events: bodies.map((b) => Event.decode(b)), ...head };
}

export async function readStoredSlice(db: Queryable, req: SliceRequest): Promise<StoredSlice> {
  const forward = req.direction === "after";
  const typeFilter = req.types.length > 0 ? "AND e.type = ANY($4::text[])" : "";
  const params: unknown[] = [req.sessionId, req.position, req.limit + 1];
  if (req.types.length > 0) params.push(req.types);
  const { rows } = await db.query<SliceRow>(
    `SELECT s.last_seq, s.status, e.body
       FROM sessions s
       LEFT JOIN LATERAL (
         SELECT e.body, e.seq FROM events e
          WHERE e.session_id = s.session_id AND e.seq ${forward ? ">" : "<"} $2 ${typeFilter}
          ORDER BY e.seq ${forward ? "ASC" : "DESC"}
          LIMIT $3
       ) e ON true
      WHERE s.session_id = $1
      ORDER BY e.seq ${forward ? "ASC" : "DESC"}`,
    params,
  );
  const first = rows[0];
  if (first === undefined) throw notFound(req.sessionId);
  const bodies = rows.flatMap((r) => (r.body === null ? [] : [r.body]));
  const hasMore = bodies.length > req.limit;
  const page = bodies.slice(0, req.limit);
  if (!forward) page.reverse();
  return { bodies: page, lastSeq: Number(first.last_seq), hasMore, status: first.status };
}
