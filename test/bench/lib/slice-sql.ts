/**
 * Our slice statement without gRPC: the service's own (forward, no type filter), run directly to
 * split a GetEvents latency into database time and RPC time, and EXPLAINed to show the plan is a
 * bounded index range scan.
 */
import type { Pool } from "pg";
import { Event } from "@metaharness/proto";
import { MAX_SLICE_BYTES, sliceStatement } from "@metaharness/session-log";

export const SLICE_SQL = sliceStatement("after", false);

/** SLICE_SQL's parameters for `limit` events after `afterSeq` (limit + 1 rows, to learn has_more). */
export function sliceParams(sessionId: string, afterSeq: number, limit: number): unknown[] {
  return [sessionId, afterSeq, limit + 1, MAX_SLICE_BYTES];
}

/** The slice as store/read.ts reads it, decoded. */
export async function sqlSlice(pool: Pool, sessionId: string, afterSeq: number, limit: number): Promise<Event[]> {
  const { rows } = await pool.query<{ body: Buffer | null }>(SLICE_SQL, sliceParams(sessionId, afterSeq, limit));
  return rows.slice(0, limit).flatMap((r) => (r.body === null ? [] : [Event.decode(r.body)]));
}
