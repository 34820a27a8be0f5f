/**
 * The outbox relay's drain statement (outbox/relay.ts, drainOnce), kept textually in step with it
 * so the drain benchmark can EXPLAIN exactly what the relay runs against a backlog; and, for
 * comparison only, the same batch with the outbox side bounded first (the relay does not run it).
 */
export const DRAIN_SQL = `SELECT o.id, o.session_id, e.body
         FROM outbox o JOIN events e ON e.session_id = o.session_id AND e.seq = o.seq
        WHERE o.shard = ANY($1::smallint[])
        ORDER BY o.id
        LIMIT $2`;

/** The same rows in the same order, but the LIMIT applies to the outbox before the join. */
export const BOUNDED_DRAIN_SQL = `WITH batch AS MATERIALIZED (
         SELECT id, session_id, seq FROM outbox
          WHERE shard = ANY($1::smallint[])
          ORDER BY id
          LIMIT $2)
       SELECT b.id, b.session_id, e.body
         FROM batch b JOIN events e ON e.session_id = b.session_id AND e.seq = b.seq
        ORDER BY b.id`;
