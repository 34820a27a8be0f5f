/**
 * Our append statement without gRPC: a batch of one request of one event, as store/append.ts
 * sends it (mh_append_serial: 003's function, which 004 keeps for such batches), run directly
 * from the bench process to split an EmitEvent latency into database time (this, with its
 * commit and NOTIFY) and the service's own.
 */
import type { Pool } from "pg";
import { Event } from "@metaharness/proto";
import { APPEND_SERIAL_SQL, appendParams, EVENTS_CHANNEL, shardOf } from "@metaharness/session-log";

/** Appends `event` (a type that changes no status: agent.message) to `sessionId`; resolves to its seq. */
export async function sqlAppend(pool: Pool, sessionId: string, event: Event): Promise<number> {
  const createdAt = new Date();
  const body = Event.encode({ ...event, sessionId, createdAt, seq: 0 }).finish();
  const { rows } = await pool.query<{ outcome: number; seq: string }>(
    APPEND_SERIAL_SQL,
    appendParams({
      sessions: [sessionId],
      expected: [null],
      epochs: [null],
      shards: [shardOf(sessionId)],
      counts: [1],
      ids: [event.id],
      types: [event.type],
      statuses: [null],
      awaiting: [null],
      bodies: [body],
      createdAt,
      // Announced as appends are (the service's hub reads it as another instance's append).
      announce: { channel: EVENTS_CHANNEL, prefix: "bench" },
    }),
  );
  const first = rows[0];
  if (first === undefined || first.outcome !== 0) throw new Error(`mh_append outcome ${first?.outcome} for ${sessionId}`);
  return Number(first.seq);
}
