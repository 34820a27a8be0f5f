/**
 * The outbox relay's drain statement as it was first written (join, then LIMIT: each batch cost
 * the whole backlog), kept for comparison with the bounded form the relay runs now
 * (outbox/batch.ts: LIMIT the outbox first, then join, within a byte budget), so the drain
 * benchmark can EXPLAIN both against the same backlog.
 */
import { RELAY_BATCH_MAX_BYTES } from "@metaharness/session-log";

export const DRAIN_SQL = `SELECT o.id, o.session_id, e.body
         FROM outbox o JOIN events e ON e.session_id = o.session_id AND e.seq = o.seq
        WHERE o.shard = ANY($1::smallint[])
        ORDER BY o.id
        LIMIT $2`;

/** DRAIN_SQL's and OUTBOX_BATCH_SQL's parameters ($3, the byte budget, only the relay's). */
export function drainParams(shards: number[], rows: number): { plain: unknown[]; bounded: unknown[] } {
  return { plain: [shards, rows], bounded: [shards, rows, RELAY_BATCH_MAX_BYTES] };
}
