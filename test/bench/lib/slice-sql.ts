/**
 * Our slice statement without gRPC: the SQL of store/read.ts (forward, no type filter), run
 * directly to split a GetEvents latency into database time and RPC time, and EXPLAINed to show
 * the plan is a bounded index range scan. Kept textually in step with store/read.ts, since the
 * service does not export its store.
 */
import type { Pool } from "pg";
import { Event } from "@metaharness/proto";

export const SLICE_SQL = `SELECT s.last_seq, s.status, e.body
       FROM sessions s
       LEFT JOIN LATERAL (
         SELECT e.body, e.seq FROM events e
          WHERE e.session_id = s.session_id AND e.seq > $2
          ORDER BY e.seq ASC
          LIMIT $3
       ) e ON true
      WHERE s.session_id = $1
      ORDER BY e.seq ASC`;

/** The slice as store/read.ts reads it (limit + 1 rows, to learn has_more), decoded. */
export async function sqlSlice(pool: Pool, sessionId: string, afterSeq: number, limit: number): Promise<Event[]> {
  const { rows } = await pool.query<{ body: Buffer | null }>(SLICE_SQL, [sessionId, afterSeq, limit + 1]);
  return rows.slice(0, limit).flatMap((r) => (r.body === null ? [] : [Event.decode(r.body)]));
}
