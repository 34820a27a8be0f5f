/**
 * The append path: the one place that assigns seqs. One transaction locks the session row,
 * finds events already appended (idempotency by event id), checks the lease epoch and expected
 * seq, then writes the events, their outbox rows and the session's new head together: an event
 * is in the log and queued for Kafka, or neither. Watchers hear of it after commit (watch/hub.ts).
 */
import type { Db, Queryable } from "@metaharness/db";
import { MhError } from "@metaharness/errors";
import { Event, SessionStatus } from "@metaharness/proto";
import { notFound } from "./sessions.js";
import { awaitingAfter, statusAfter } from "./rows.js";
import { shardOf } from "../outbox/shard.js";


export interface AppendRequest {
  readonly sessionId: string;
  /** Validated events with ids; seq, session_id and created_at are set here. */
  readonly events: readonly Event[];
  readonly expectedSeq?: number | undefined;
  readonly leaseEpoch?: number | undefined;
}

export interface AppendResult {
  /** In request order; duplicates are the events as first appended. */
  readonly events: Event[];
  readonly duplicates: number;
  readonly lastSeq: number;
}

interface HeadRow {
  last_seq: string;
  lease_epoch: string;
  status: SessionStatus;
  dup_body: Uint8Array | null;
}

export async function appendEvents(db: Db, req: AppendRequest): Promise<AppendResult> {
  return db.transaction((tx) => appendInTransaction(tx, req));
}

async function appendInTransaction(client: Queryable, req: AppendRequest): Promise<AppendResult> {
  const { rows } = await client.query<HeadRow>(
    `SELECT s.last_seq, s.lease_epoch, s.status, d.body AS dup_body
       FROM sessions s
       LEFT JOIN events d ON d.session_id = s.session_id AND d.event_id = ANY($2::text[])
      WHERE s.session_id = $1
        FOR UPDATE OF s`,
    [req.sessionId, req.events.map((e) => e.id)],
  );
  const head = rows[0];
  if (head === undefined) throw notFound(req.sessionId);

  const existing = new Map<string, Event>();
  for (const row of rows) {
    if (row.dup_body === null) continue;
    const event = Event.decode(row.dup_body);
    existing.set(event.id, event);
  }
  const lastSeq = Number(head.last_seq);
  const fresh = req.events.filter((e) => !existing.has(e.id));
  // A retried append whose events all made it the first time succeeds again, whatever the
  // session's head has become since: that is what makes retries safe.
  if (fresh.length === 0) {
    return { events: req.events.map((e) => existing.get(e.id) ?? e), duplicates: existing.size, lastSeq };
  }

  if (req.leaseEpoch !== undefined && req.leaseEpoch !== Number(head.lease_epoch)) {
    throw new MhError(
      "ABORTED",
      `lease epoch ${req.leaseEpoch} is stale: session ${req.sessionId} is at epoch ${head.lease_epoch}`,
      { field: "lease_epoch", details: { current_epoch: Number(head.lease_epoch) } },
    );
  }
  if (req.expectedSeq !== undefined && req.expectedSeq !== lastSeq) {
    throw new MhError(
      "FAILED_PRECONDITION",
      `expected_seq ${req.expectedSeq} does not match: session ${req.sessionId} is at seq ${lastSeq}`,
      { field: "expected_seq", details: { current_seq: lastSeq } },
    );
  }
  if (head.status === SessionStatus.SESSION_STATUS_TERMINATED) {
    throw new MhError("FAILED_PRECONDITION", `session ${req.sessionId} is terminated; nothing more can be appended`, {
      field: "session_id",
    });
  }

  const createdAt = new Date();
  let seq = lastSeq;
  let status: SessionStatus | undefined;
  let awaiting: boolean | undefined;
  const stored = fresh.map((e) => {
    seq += 1;
    status = statusAfter(e.type) ?? status;
    awaiting = awaitingAfter(e.type) ?? awaiting;
    return { ...e, sessionId: req.sessionId, seq, createdAt };
  });
  await client.query(
    `WITH ins AS (
       INSERT INTO events (session_id, seq, event_id, type, created_at, body)
       SELECT $1, s, i, t, $5, b FROM unnest($2::bigint[], $3::text[], $4::text[], $6::bytea[]) AS x(s, i, t, b)
       RETURNING seq
     ), queued AS (
       INSERT INTO outbox (shard, session_id, seq) SELECT $7, $1, seq FROM ins
     )
     UPDATE sessions SET last_seq = $8::bigint, status = coalesce($9::smallint, status),
            awaiting_harness = coalesce($10::boolean, awaiting_harness), updated_at = $5
      WHERE session_id = $1`,
    [
      req.sessionId,
      stored.map((e) => e.seq),
      stored.map((e) => e.id),
      stored.map((e) => e.type),
      createdAt,
      stored.map((e) => Buffer.from(Event.encode(e).finish())),
      shardOf(req.sessionId),
      seq,
      status ?? null,
      awaiting ?? null,
    ],
  );
  const bySeqId = new Map(stored.map((e) => [e.id, e]));
  return {
    events: req.events.map((e) => existing.get(e.id) ?? bySeqId.get(e.id) ?? e),
    duplicates: existing.size,
    lastSeq: seq,
  };
}
