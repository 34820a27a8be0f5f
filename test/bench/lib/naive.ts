/**
 * The naive store the read benchmark compares against: read the whole session in order and slice
 * in memory, which is what a log without positional reads does, on the service's own tables. Its
 * cost grows with the log; ours should not.
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
