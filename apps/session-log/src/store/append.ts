/**
 * The append path: the one place that assigns seqs. A batch of append requests (any sessions)
 * is one call of the SQL function mh_append_v2 (migrations/004, 009): in one statement and one
 * transaction it locks the sessions, finds events already appended (idempotency by event id),
 * checks each request's lease epoch and expected seq, and writes the events, their outbox rows
 * and the sessions' new heads: an event is in the log and queued for Kafka, or neither. A
 * request's own failure comes back as its outcome and leaves the others alone. Requests are
 * gathered into batches by appender.ts. Other instances hear of the batch by the NOTIFY it sends
 * with its commit; this instance's watchers are poked once it returns (watch/hub.ts). Each
 * request's answer also says how long the session's lease has left after it (migrations/009),
 * read under the lock the append holds: the gateway skips a Wake while a harness follows the log.
 */
import type { Queryable, WriteOutcome } from "@metaharness/db";
import { CurrentEpoch, CurrentSeq, MhError, SizeLimit } from "@metaharness/errors";
import type { ValidatedEvent } from "@metaharness/events";
import { Event } from "@metaharness/proto";
import { MAX_CLIENT_RECEIVE_MESSAGE_BYTES } from "@metaharness/service-kit/grpc";
import { notFound } from "./sessions.js";
import { awaitingAfter, statusAfter } from "./rows.js";
import { shardOf } from "./shard.js";
import { withSeq } from "../stored-wire.js";

export interface AppendRequest {
  readonly sessionId: string;
  /**
   * Validated events with ids, and their encodings, both without session_id, seq and created_at:
   * those are set here, appended to the encoding (a field that comes later wins when decoded).
   */
  readonly events: readonly ValidatedEvent[];
  readonly expectedSeq?: number | undefined;
  readonly leaseEpoch?: number | undefined;
  /** Once appended, the lease of `leaseEpoch` (still held) runs this long from the append (EmitEventsRequest.lease_ttl_ms). */
  readonly leaseTtlMs?: number | undefined;
}

export interface AppendResult {
  /** In request order; duplicates are the events as first appended. */
  readonly events: Event[];
  /** The events as stored (encoded), in the same order. */
  readonly bodies: Uint8Array[];
  readonly duplicates: number;
  readonly lastSeq: number;
  /**
   * How long the session's lease has left once the request is in the log, in ms on the
   * database's clock; 0 when none is held or it has run out (EmitEventsResponse.lease_left_ms).
   */
  readonly leaseLeftMs: number;
}

interface OutcomeRow {
  req: number;
  outcome: number;
  seq: string | null;
  cur: string | null;
  /** The event as first appended, when it was appended before. */
  body: Uint8Array | null;
  /** The lease's ms left after the request (null: none held); on an appended request's rows. */
  lease_ms: string | number | null;
}

/**
 * The most a request's answer carries of events: what our clients take, less room for the
 * framing of 1000 events. A request of new events fits (at most one message, plus under 100
 * bytes an event that the log adds). Events it repeats come back as first appended, and a
 * client may send ids of events already in the log with any bodies: 1000 small events naming
 * large ones would otherwise make the service read a gigabyte and answer with a message no
 * client takes. So mh_append refuses a request whose answer would pass this (outcome 5) before
 * it writes or reads any body (migrations/005). A retry repeats a request of at most one
 * message, stored with under 100 bytes more an event, so it always fits.
 */
export const MAX_ECHOED_BYTES = MAX_CLIENT_RECEIVE_MESSAGE_BYTES - 64 * 1024;

/**
 * The one statement of an append batch of several requests (exported for the benchmark and
 * tests), its rows in request order and, within a request, in event order.
 */
export const APPEND_SQL = `SELECT req, outcome, seq, cur, body, lease_ms
  FROM mh_append_v2($1::text[], $2::bigint[], $3::bigint[], $4::smallint[], $5::int[],
                    $6::text[], $7::text[], $8::smallint[], $9::boolean[], $10::bytea[], $11::timestamptz,
                    $12::text, $13::text, $14::bigint) WITH ORDINALITY AS a(req, outcome, seq, cur, body, lease_ms, n)
 ORDER BY req, n`;
/**
 * A batch of one request goes straight to the per-request function mh_append_v2 hands its work
 * to (migrations/004, 009): its loop runs once, and calling it from mh_append cost 0.1-0.3 ms more.
 */
export const APPEND_SERIAL_SQL = APPEND_SQL.replace("mh_append_v2(", "mh_append_serial_v2(");
/**
 * A batch in which a request sets its lease's TTL with its events (migrations/007, 009): the same
 * append, then those leases set to run out that long from it, in its transaction (such a
 * request's lease_ms is then the time it set). $15: per request, the TTL in ms or null.
 */
export const APPEND_LEASE_SQL = APPEND_SQL.replace("mh_append_v2(", "mh_append_lease_v2(").replace("$14::bigint)", "$14::bigint, $15::int[])");

/**
 * Where the batch's commit announces the sessions that grew: a channel and a payload prefix. A
 * null channel sends no NOTIFY (migrations/008): no other instance is there to hear it.
 */
export interface Announce {
  readonly channel: string | null;
  readonly prefix: string;
}

/**
 * The arguments of the append statement by name: per request (sessions to counts), per event
 * (ids to bodies; an event's body is its encoding without seq), then the batch's time and its
 * announcement. Exported so tests and benchmarks call the statement as the service does.
 */
export interface AppendColumns {
  readonly sessions: readonly string[];
  readonly expected: ReadonlyArray<number | null>;
  readonly epochs: ReadonlyArray<number | null>;
  readonly shards: readonly number[];
  readonly counts: readonly number[];
  readonly ids: readonly string[];
  readonly types: readonly string[];
  /** The status each event sets (rows.ts statusAfter), or null. */
  readonly statuses: ReadonlyArray<number | null>;
  readonly awaiting: ReadonlyArray<boolean | null>;
  readonly bodies: readonly Uint8Array[];
  readonly createdAt: Date;
  readonly announce: Announce;
}

/** APPEND_SQL's (and APPEND_SERIAL_SQL's) parameters, $1 to $14, with the echo limit last. */
export function appendParams(c: AppendColumns): unknown[] {
  return [c.sessions, c.expected, c.epochs, c.shards, c.counts, c.ids, c.types, c.statuses, c.awaiting, c.bodies,
    c.createdAt, c.announce.channel, c.announce.prefix, MAX_ECHOED_BYTES];
}

/** Appends every request in one statement; one outcome per request, in order. */
export async function appendBatch(
  db: Queryable,
  requests: readonly AppendRequest[],
  announce: Announce,
): Promise<Array<WriteOutcome<AppendResult>>> {
  // Stamped as the batch goes out, within a round trip of its commit.
  const createdAt = new Date();
  const events: Event[] = [];
  const encoded: Buffer[] = [];
  for (const r of requests) {
    const stamp = Event.encode(Event.fromPartial({ sessionId: r.sessionId, createdAt })).finish();
    for (const v of r.events) {
      // Appending these to bytes that already held them would merge two created_at messages.
      if (v.event.sessionId !== "" || v.event.seq !== 0 || v.event.createdAt !== undefined) {
        throw new MhError("INTERNAL", "an event to append carries session_id, seq or created_at, which the log sets");
      }
      events.push({ ...v.event, sessionId: r.sessionId, createdAt, seq: 0 });
      encoded.push(Buffer.concat([v.encoded, stamp]));
    }
  }
  const params = appendParams({
    sessions: requests.map((r) => r.sessionId),
    expected: requests.map((r) => r.expectedSeq ?? null),
    epochs: requests.map((r) => r.leaseEpoch ?? null),
    shards: requests.map((r) => shardOf(r.sessionId)),
    counts: requests.map((r) => r.events.length),
    ids: events.map((e) => e.id),
    types: events.map((e) => e.type),
    statuses: events.map((e) => statusAfter(e.type) ?? null),
    awaiting: events.map((e) => awaitingAfter(e.type) ?? null),
    bodies: encoded,
    createdAt,
    announce,
  });
  const setsLease = requests.some((r) => r.leaseTtlMs !== undefined);
  if (setsLease) params.push(requests.map((r) => r.leaseTtlMs ?? null));
  const sql = setsLease ? APPEND_LEASE_SQL : requests.length === 1 ? APPEND_SERIAL_SQL : APPEND_SQL;
  const { rows } = await db.query<OutcomeRow>(sql, params);

  const byRequest = requests.map((): OutcomeRow[] => []);
  for (const row of rows) byRequest[row.req - 1]?.push(row);
  let offset = 0;
  return requests.map((request, r) => {
    const end = offset + request.events.length;
    const sent = { events: events.slice(offset, end), encoded: encoded.slice(offset, end) };
    offset = end;
    return outcomeOf(request, sent, byRequest[r] ?? []);
  });
}

function outcomeOf(
  req: AppendRequest,
  sent: { readonly events: readonly Event[]; readonly encoded: readonly Uint8Array[] },
  rows: readonly OutcomeRow[],
): WriteOutcome<AppendResult> {
  const first = rows[0];
  if (first === undefined) return failed(new MhError("INTERNAL", `mh_append returned nothing for session ${req.sessionId}`));
  const cur = Number(first.cur);
  switch (first.outcome) {
    case 0:
      break;
    case 1:
      return failed(notFound(req.sessionId));
    case 2:
      return failed(
        new MhError(
          "ABORTED",
          `lease epoch ${req.leaseEpoch} is stale: session ${req.sessionId} is at epoch ${cur}`,
          { field: "lease_epoch", details: CurrentEpoch.of({ current_epoch: cur }) },
        ),
      );
    case 3:
      return failed(
        new MhError(
          "FAILED_PRECONDITION",
          `expected_seq ${req.expectedSeq} does not match: session ${req.sessionId} is at seq ${cur}`,
          { field: "expected_seq", details: CurrentSeq.of({ current_seq: cur }) },
        ),
      );
    case 4:
      return failed(
        new MhError("FAILED_PRECONDITION", `session ${req.sessionId} is terminated; nothing more can be appended`, {
          field: "session_id",
        }),
      );
    case 5:
      return failed(tooLargeToEcho(cur - 1));
    case 6:
      return failed(
        new MhError("FAILED_PRECONDITION", `session ${req.sessionId} is archived and cannot receive events`, { field: "session_id" }),
      );
    default:
      return failed(new MhError("INTERNAL", `mh_append returned outcome ${first.outcome}`));
  }
  if (rows.length !== sent.events.length) {
    return failed(new MhError("INTERNAL", `mh_append returned ${rows.length} events for ${sent.events.length}`));
  }
  let duplicates = 0;
  const events: Event[] = [];
  const bodies: Uint8Array[] = [];
  for (const [i, row] of rows.entries()) {
    bodies.push(row.body ?? withSeq(sent.encoded[i] as Uint8Array, Number(row.seq)));
    if (row.body !== null) {
      duplicates += 1;
      events.push(Event.decode(row.body));
    } else {
      events.push({ ...(sent.events[i] as Event), seq: Number(row.seq) });
    }
  }
  return { ok: true, value: { events, bodies, duplicates, lastSeq: cur, leaseLeftMs: Number(first.lease_ms ?? 0) } };
}

/**
 * Events of the request were appended before and, as first appended, take with the rest of it
 * more than one answer carries: read them with GetEvents. FAILED_PRECONDITION (not retried: the
 * same request meets the same log), naming the first event that does not fit; nothing of the
 * request was written.
 */
function tooLargeToEcho(index: number): MhError {
  return new MhError(
    "FAILED_PRECONDITION",
    `the answer would echo more than ${MAX_ECHOED_BYTES} bytes by events[${index}]: this request names events appended ` +
      "before with larger bodies than it sent, and an answer echoes them as stored; nothing was written; read them with GetEvents",
    { field: `events[${index}].id`, details: SizeLimit.of({ limit_bytes: MAX_ECHOED_BYTES }) },
  );
}

function failed(error: Error): WriteOutcome<AppendResult> {
  return { ok: false, error };
}
