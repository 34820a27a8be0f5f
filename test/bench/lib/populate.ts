/**
 * Bulk-loads a long session straight into the service's tables, because a million appends through
 * gRPC would take minutes. One INSERT ... SELECT generate_series writes rows exactly like
 * store/append.ts does: `body` is the protobuf-encoded Event as served. Each body is a
 * precomputed template (the event without id and seq) followed by the encoded `seq` and `id`
 * fields; protobuf decoding merges concatenated fields, so every row decodes to its own seq and
 * id. The outbox is skipped (these events are not meant for Kafka); last_seq is moved at the end,
 * and VACUUM ANALYZE leaves the table as a long-lived one would be (statistics, hint bits, no
 * autovacuum starting in the middle of the measurements).
 */
import pg from "pg";
import { Event } from "@metaharness/proto";
import { nowMs } from "./stats.js";

/** Ids of bulk-loaded events: "sevt_bulk_" and the zero-padded seq (valid client-chosen ids). */
export const BULK_ID_PREFIX = "sevt_bulk_";
const ID_DIGITS = 8;
/** The SQL varint below covers three bytes (seq < 2^21). */
const MAX_BULK_EVENTS = 2 ** 21 - 1;
const CHUNK = 250_000;

export interface PopulateTimings {
  readonly insertMs: number;
  readonly vacuumAnalyzeMs: number;
  readonly tableBytes: number;
}

// Protobuf base-128 varint of n (1 <= n < 2^21) as bytea.
const VARINT = `CASE
    WHEN n < 128 THEN set_byte('\\x00'::bytea, 0, n::int)
    WHEN n < 16384 THEN set_byte(set_byte('\\x0000'::bytea, 0, ((n & 127) | 128)::int), 1, (n >> 7)::int)
    ELSE set_byte(set_byte(set_byte('\\x000000'::bytea, 0, ((n & 127) | 128)::int),
                           1, (((n >> 7) & 127) | 128)::int), 2, (n >> 14)::int)
  END`;

// Field 3 (seq, varint) is tag 0x18; field 1 (id, length-delimited) is tag 0x0a.
const INSERT = `
  INSERT INTO events (session_id, seq, event_id, type, created_at, body)
  SELECT $1, n, id, $2, $3, $4::bytea || '\\x18'::bytea || ${VARINT}
                            || '\\x0a'::bytea || set_byte('\\x00'::bytea, 0, length(id)) || convert_to(id, 'UTF8')
    FROM (SELECT n, $5 || lpad(n::text, ${ID_DIGITS}, '0') AS id
            FROM generate_series($6::bigint, $7::bigint) AS n) AS g`;

/**
 * Appends events 1..count of `template`'s type and content to the (empty, existing) session.
 * The template's id, seq and session id are replaced.
 */
export async function populateSession(
  databaseUrl: string,
  sessionId: string,
  count: number,
  template: Event,
): Promise<PopulateTimings> {
  if (count < 1 || count > MAX_BULK_EVENTS) throw new Error(`count must be in 1..${MAX_BULK_EVENTS}`);
  const createdAt = template.createdAt ?? new Date();
  const body = Buffer.from(Event.encode({ ...template, id: "", seq: 0, sessionId, createdAt }).finish());
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const t0 = nowMs();
    // Durability of a bulk load we would just redo is not worth an fsync per chunk.
    await client.query("SET synchronous_commit = off");
    for (let from = 1; from <= count; from += CHUNK) {
      const to = Math.min(count, from + CHUNK - 1);
      await client.query(INSERT, [sessionId, template.type, createdAt, body, BULK_ID_PREFIX, from, to]);
    }
    await client.query("UPDATE sessions SET last_seq = $2, updated_at = now() WHERE session_id = $1", [
      sessionId,
      count,
    ]);
    const t1 = nowMs();
    await client.query("VACUUM ANALYZE events");
    const t2 = nowMs();
    const size = await client.query<{ bytes: string }>("SELECT pg_total_relation_size('events') AS bytes");
    return { insertMs: t1 - t0, vacuumAnalyzeMs: t2 - t1, tableBytes: Number(size.rows[0]?.bytes ?? 0) };
  } finally {
    await client.end();
  }
}

export function bulkEventId(seq: number): string {
  return BULK_ID_PREFIX + String(seq).padStart(ID_DIGITS, "0");
}
