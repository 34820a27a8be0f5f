/**
 * What one drain of the outbox relay reads: the oldest outbox rows of its shards, with their
 * events as stored, in outbox order (so in seq order per session). Bounded by rows and by bytes:
 * a backlog of large events (a burst of big tool results while Kafka was down) read 500 at a
 * time would be 500 MiB in the service's memory at the default 1 MiB payload limit, and 8 GB at
 * the largest one, and a relay that runs out of memory never drains its shards.
 */
import type { Queryable } from "@metaharness/db";
import { withinByteBudget } from "../store/byte-budget.js";

/** The most event bytes one relay batch reads (it always reads at least one event). */
export const RELAY_BATCH_MAX_BYTES = 16 * 1024 * 1024;

export interface OutboxRow {
  id: string;
  session_id: string;
  /** bigint: text from pg, a number from PGlite. */
  seq: string | number | bigint;
  event_id: string;
  type: string;
  /** The session's tenant ('' for none), for the record's mh-tenant header. */
  tenant: string;
  body: Uint8Array;
}

export interface OutboxBatch {
  readonly rows: OutboxRow[];
  /**
   * Outbox rows of the batch whose event is not in the log: nothing to publish, to be deleted
   * with the published ones. None today (no event is ever deleted), but a row skipped instead
   * would stay first in its shard's order for good, and 500 of them would stop its relay.
   */
  readonly gone: string[];
  /** Rows were left for the next batch: the LIMIT was reached or the byte budget cut it. */
  readonly more: boolean;
}

// $1 shards, $2 rows, $3 bytes; exported for the drain benchmark. One row per outbox row the
// LIMIT took, in outbox order, whose body is null past the byte budget (store/byte-budget.ts),
// so to the end, and whose event columns are null if its event is gone. Pick the batch first,
// then look its events up: joining before the LIMIT made each batch cost the whole backlog
// (136-431 ms per batch at 50k queued; ~1 ms this way). Each lookup is an index probe
// (LATERAL ... LIMIT 1), whatever the planner believes of the events table: with a plain join,
// statistics from when the table was small (a new log, or one that grew faster than autoanalyze)
// made it hash the whole table at every drain, 8.5 ms at 5,000 events and growing with the
// log, which at 1,000 appends a second took more of Postgres than the appends themselves.
// The session's tenant is one probe of the sessions table's primary key per row.
export const OUTBOX_BATCH_SQL = `WITH batch AS MATERIALIZED (
     SELECT id, session_id, seq FROM outbox WHERE shard = ANY($1::smallint[]) ORDER BY id LIMIT $2
   )
   SELECT b.id, b.session_id, e.seq, e.event_id, e.type,
          COALESCE((SELECT s.tenant FROM sessions s WHERE s.session_id = b.session_id), '') AS tenant,
          CASE WHEN ${withinByteBudget("e.body", "$3")} THEN e.body END AS body
     FROM batch b
     LEFT JOIN LATERAL (SELECT e.seq, e.event_id, e.type, e.body FROM events e
                         WHERE e.session_id = b.session_id AND e.seq = b.seq LIMIT 1) e ON true
   WINDOW w AS (ORDER BY b.id ROWS UNBOUNDED PRECEDING)
    ORDER BY b.id`;

/**
 * OUTBOX_BATCH_SQL that first deletes the rows of the relay's previous batch ($4, published), in
 * the same statement: a drain is one round trip to Postgres instead of two (the DELETE after each
 * produce was 1.2 of a text-only turn's statements). The batch passes over those rows: the
 * statement's snapshot still holds what its own DELETE removes.
 */
export const OUTBOX_DELETE_AND_BATCH_SQL = `WITH published AS (DELETE FROM outbox WHERE id = ANY($4::bigint[])),
   ${OUTBOX_BATCH_SQL.slice("WITH ".length).replace("WHERE shard = ANY($1::smallint[])", "WHERE shard = ANY($1::smallint[]) AND id <> ALL($4::bigint[])")}`;

type BatchRow = { [K in keyof OutboxRow]: K extends "id" | "session_id" | "tenant" ? OutboxRow[K] : OutboxRow[K] | null };

/** The next batch of `shards`; `published` (the previous batch's ids, its events published) are deleted in the same statement. */
export async function readOutboxBatch(
  db: Queryable,
  shards: readonly number[],
  maxRows: number,
  maxBytes: number,
  published: readonly string[] = [],
): Promise<OutboxBatch> {
  const { rows } =
    published.length === 0
      ? await db.query<BatchRow>(OUTBOX_BATCH_SQL, [[...shards], maxRows, maxBytes])
      : await db.query<BatchRow>(OUTBOX_DELETE_AND_BATCH_SQL, [[...shards], maxRows, maxBytes, [...published]]);
  const gone = rows.filter((r) => r.seq === null).map((r) => r.id);
  // Past the budget the bodies are null to the end.
  const cut = rows.findIndex((r) => r.seq !== null && r.body === null);
  const kept = (cut === -1 ? rows : rows.slice(0, cut)).filter((r): r is OutboxRow => r.seq !== null);
  return { rows: kept, gone, more: rows.length === maxRows || cut !== -1 };
}
