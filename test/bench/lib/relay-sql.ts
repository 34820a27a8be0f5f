/**
 * The outbox relay's drain statement as it was first written (join, then LIMIT: each batch cost
 * the whole backlog), kept for comparison, and the bounded form the relay runs now
 * (outbox/relay.ts, drainOnce: LIMIT the outbox first, then join), so the drain benchmark can
 * EXPLAIN both against the same backlog.
 */
export const DRAIN_SQL = `SELECT o.id, o.session_id, e.body
         FROM outbox o JOIN events e ON e.session_id = o.session_id AND e.seq = o.seq
        WHERE o.shard = ANY($1::smallint[])
        ORDER BY o.id
        LIMIT $2`;

/** What relay.ts runs: the same rows in the same order, with the LIMIT applied before the join. */
export const BOUNDED_DRAIN_SQL = `WITH batch AS MATERIALIZED (
         SELECT id, session_id, seq FROM outbox
          WHERE shard = ANY($1::smallint[])
          ORDER BY id
          LIMIT $2)
       SELECT b.id, b.session_id, e.body
         FROM batch b JOIN events e ON e.session_id = b.session_id AND e.seq = b.seq
        ORDER BY b.id`;
