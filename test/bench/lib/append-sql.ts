/**
 * Our append statement without gRPC: a batch of one request of one event, as store/append.ts
 * sends it (mh_append_serial: 003's function, which 004 keeps for such batches), run directly
 * from the bench process to split an EmitEvent latency into database time (this, with its
 * commit and NOTIFY) and the service's own.
 */
import type { Pool } from "pg";
import { Event } from "@metaharness/proto";
import { APPEND_SERIAL_SQL, EVENTS_CHANNEL, MAX_ECHOED_BYTES, shardOf } from "@metaharness/session-log";

/** Appends `event` (a type that changes no status: agent.message) to `sessionId`; resolves to its seq. */
export async function sqlAppend(pool: Pool, sessionId: string, event: Event): Promise<number> {
  const createdAt = new Date();
  const body = Event.encode({ ...event, sessionId, createdAt, seq: 0 }).finish();
  const { rows } = await pool.query<{ outcome: number; seq: string }>(APPEND_SERIAL_SQL, [
    [sessionId],
    [null],
    [null],
    [shardOf(sessionId)],
    [1],
    [event.id],
    [event.type],
    [null],
    [null],
    [Buffer.from(body)],
    createdAt,
    // Announced as appends are (the service's hub reads it as another instance's append).
    EVENTS_CHANNEL,
    "bench",
    MAX_ECHOED_BYTES,
  ]);
  const first = rows[0];
  if (first === undefined || first.outcome !== 0) throw new Error(`mh_append outcome ${first?.outcome} for ${sessionId}`);
  return Number(first.seq);
}
