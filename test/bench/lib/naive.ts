/**
 * The baselines the read benchmark compares against, on the service's own tables:
 * - the naive store: read the whole session in order and slice in memory, what a log without
 *   positional reads does, whose cost grows with the log;
 * - our statement alone: the SQL of store/read.ts run without gRPC, to split a GetEvents latency
 *   into database time and RPC time. Kept textually in step with store/read.ts (forward, no type
 *   filter); the service does not export its store.
 */
import type { Pool } from "pg";
import { Event } from "@metaharness/proto";

/** Events after `afterSeq`, at most `limit`: seqs are dense from 1, so row i holds seq i + 1. */
export async function naiveSlice(pool: Pool, sessionId: string, afterSeq: number, limit: number): Promise<Event[]> {
  const { rows } = await pool.query<{ body: Buffer }>("SELECT body FROM events WHERE session_id = $1 ORDER BY seq", [
    sessionId,
  ]);
  return rows.slice(afterSeq, afterSeq + limit).map((r) => Event.decode(r.body));
}

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

/** The slice as store/read.ts reads it (limit + 1 rows to learn has_more), decoded. */
export async function sqlSlice(pool: Pool, sessionId: string, afterSeq: number, limit: number): Promise<Event[]> {
  const { rows } = await pool.query<{ body: Buffer | null }>(SLICE_SQL, [sessionId, afterSeq, limit + 1]);
  return rows.slice(0, limit).flatMap((r) => (r.body === null ? [] : [Event.decode(r.body)]));
}
