/**
 * Leases: which harness owns a session. The epoch grows each time the lease goes to a holder that
 * did not already hold it unexpired; EmitEvent compares it, so a writer presumed dead is fenced
 * off the moment its successor acquires. Expiry uses the database clock, never a caller's. A lease
 * ends three ways: released, freed when its holder's line to the log ends (freeLeasesOf: the
 * holder died), or expired (a holder that hangs or is cut off with its connection open).
 */
import type { Queryable } from "@metaharness/db";
import { CurrentEpoch, LeaseHolder, MhError, SessionState, invalidArgument } from "@metaharness/errors";
import { SessionStatus, type Lease, type Session } from "@metaharness/proto";
import { SESSION_COLUMNS, leaseFromRow, sessionFromRow, type SessionRow } from "./rows.js";
import { NEEDS_HARNESS, notFound } from "./sessions.js";
import { MAX_SLICE_BYTES, sliceBodies, sliceEvents } from "./read.js";
import { leaseTakeovers } from "../metrics.js";

/** Down to half a second: the harness's TTL is chosen by test/bench/recovery.ts, which measures recovery against false expiries. */
export const MIN_TTL_MS = 500;
export const MAX_TTL_MS = 600_000;

type LeaseRow = Pick<SessionRow, "lease_holder" | "lease_epoch" | "lease_expires_at">;
const LEASE_COLUMNS = "lease_holder, lease_epoch, lease_expires_at";
const TERMINATED = SessionStatus.SESSION_STATUS_TERMINATED;

/** A holder's name as every lease RPC takes it (HoldLeases too). */
export function checkHolder(holder: string): void {
  if (holder === "" || holder.length > 256) throw invalidArgument("holder", "must be 1-256 characters");
  if (holder.includes("\0")) throw invalidArgument("holder", "holds a NUL character, which cannot be stored");
}

/** A holder and TTL as every lease RPC takes them (RenewLeases too). */
export function checkArgs(holder: string, ttlMs: number | undefined): void {
  checkHolder(holder);
  if (ttlMs !== undefined && (ttlMs < MIN_TTL_MS || ttlMs > MAX_TTL_MS)) {
    throw invalidArgument("ttl_ms", `must be between ${MIN_TTL_MS} and ${MAX_TTL_MS}, got ${ttlMs}`);
  }
}

/** A TTL set with an append (EmitEventsRequest.lease_ttl_ms) names the lease it sets: lease_epoch. */
export function checkLeaseTtlWithAppend(ttlMs: number, leaseEpoch: number | undefined): void {
  if (leaseEpoch === undefined) throw invalidArgument("lease_ttl_ms", "needs lease_epoch, the lease whose TTL it sets");
  if (ttlMs < MIN_TTL_MS || ttlMs > MAX_TTL_MS) throw invalidArgument("lease_ttl_ms", `must be between ${MIN_TTL_MS} and ${MAX_TTL_MS}, got ${ttlMs}`);
}

function toLease(row: LeaseRow): Lease {
  const lease = leaseFromRow(row);
  if (lease === undefined) throw new MhError("INTERNAL", "lease row without holder");
  return lease;
}

/**
 * The lease's statement: $1 session, $2 holder, $3 TTL; $4 and $5 the events read with it, a
 * session's first $4 - 1 when it has at most $5 (store/read.ts sliceEvents: $4 is the slice's
 * limit + 1, $6 its byte budget). Its snapshot is the statement's start: an append committed
 * while the UPDATE waited for the row is in the row it returns (last_seq) but not in the events
 * (acquireLease tells, by their count).
 */
const ACQUIRE_SQL = `WITH prior AS (SELECT lease_holder AS prior_holder, status AS prior_status FROM sessions WHERE session_id = $1),
     taken AS (
       UPDATE sessions
          SET lease_epoch = CASE WHEN lease_holder = $2 AND lease_expires_at > now()
                                 THEN lease_epoch ELSE lease_epoch + 1 END,
              lease_holder = $2,
              lease_expires_at = now() + make_interval(secs => $3::double precision / 1000)
        WHERE session_id = $1 AND status <> ${TERMINATED}
          AND (lease_holder IS NULL OR lease_expires_at <= now() OR lease_holder = $2)
        RETURNING ${SESSION_COLUMNS})
SELECT taken.*, (SELECT prior_holder FROM prior), (SELECT prior_status FROM prior), e.fetched, e.bodies
  FROM taken
  CROSS JOIN LATERAL (${sliceEvents("after", { session: "taken.session_id", bound: "0", limit: "$4", budget: "$6", when: "taken.last_seq <= $5" })}) e`;

/**
 * Takes the lease for `holder`, and returns it with the session as it was then (the same row, so
 * a harness needs no second read for its metadata) and, for a session of at most `maxEvents`
 * events, its events as stored when the statement's snapshot holds them all (`events`; undefined
 * otherwise: a longer session, or an append that committed while the lease was taken, so the
 * caller reads them now that the lease fences any other writer). Refused (FAILED_PRECONDITION)
 * while another holder's lease runs, naming `holder`, and for a terminated session, naming
 * `session_id`: nothing can be appended to it, so a lease would only raise the epoch. A harness
 * tells the two apart by the field.
 */
export async function acquireLease(
  db: Queryable,
  sessionId: string,
  holder: string,
  ttlMs: number,
  maxEvents = 0,
): Promise<{ lease: Lease; session: Session; events: Uint8Array[] | undefined }> {
  checkArgs(holder, ttlMs);
  // prior: the holder and status before this statement, to count takeovers (another holder's lease expired mid-turn).
  const { rows } = await db.query<SessionRow & { prior_holder: string | null; prior_status: SessionStatus | null; fetched: string; bodies: string | null }>(ACQUIRE_SQL, [
    sessionId,
    holder,
    ttlMs,
    maxEvents + 1,
    maxEvents,
    MAX_SLICE_BYTES,
  ]);
  if (rows[0] !== undefined) {
    // A stalled holder's: its lease ran out mid-turn. One that ran out with its session idle was a
    // harness's linger ending as its turn's last append set it (EmitEventsRequest.lease_ttl_ms).
    const stalled = rows[0].prior_holder !== null && rows[0].prior_holder !== holder && rows[0].prior_status === SessionStatus.SESSION_STATUS_RUNNING;
    if (stalled) leaseTakeovers.add(1, { via: "expired" });
    const session = sessionFromRow(rows[0]);
    const { bodies, hasMore } = sliceBodies(rows[0]);
    // Seqs are dense from 1: all of them, when there are as many as the row's last_seq.
    const events = session.lastSeq <= maxEvents && !hasMore && bodies.length === session.lastSeq ? bodies : undefined;
    return { lease: toLease(rows[0]), session, events };
  }
  const { status, lease: current } = await currentLease(db, sessionId);
  if (status === TERMINATED) {
    throw new MhError("FAILED_PRECONDITION", `session ${sessionId} is terminated; it takes no lease`, {
      field: "session_id",
      details: SessionState.of({ status: "terminated" }),
    });
  }
  throw new MhError(
    "FAILED_PRECONDITION",
    `session ${sessionId} is leased to ${current?.holder ?? "another holder"} until ${current?.expiresAt?.toISOString() ?? "?"}`,
    { field: "holder", details: LeaseHolder.of({ holder: current?.holder ?? "", epoch: current?.epoch ?? 0 }) },
  );
}

/** Extends the caller's lease. Allowed even just after expiry if nobody took over: the epoch fences. */
export async function renewLease(
  db: Queryable,
  sessionId: string,
  holder: string,
  epoch: number,
  ttlMs: number,
): Promise<Lease> {
  checkArgs(holder, ttlMs);
  const { rows } = await db.query<LeaseRow>(
    `UPDATE sessions SET lease_expires_at = now() + make_interval(secs => $4::double precision / 1000)
      WHERE session_id = $1 AND lease_holder = $2 AND lease_epoch = $3
      RETURNING ${LEASE_COLUMNS}`,
    [sessionId, holder, epoch, ttlMs],
  );
  if (rows[0] !== undefined) return toLease(rows[0]);
  throw await lostLease(db, sessionId, holder, epoch);
}

/** Gives the lease back; says whether the session still needs a harness (another may take it now). */
export async function releaseLease(db: Queryable, sessionId: string, holder: string, epoch: number): Promise<{ needsHarness: boolean }> {
  checkArgs(holder, undefined);
  const { rows } = await db.query<{ needs_harness: boolean }>(
    `UPDATE sessions SET lease_holder = NULL, lease_expires_at = NULL
      WHERE session_id = $1 AND lease_holder = $2 AND lease_epoch = $3
      RETURNING ${NEEDS_HARNESS} AS needs_harness`,
    [sessionId, holder, epoch],
  );
  if (rows[0] === undefined) throw await lostLease(db, sessionId, holder, epoch);
  return { needsHarness: rows[0].needs_harness };
}

/**
 * Frees every lease `holder` holds, expired or not: its line to the log ended, so it is gone.
 * The epoch stays: the next acquire raises it, which fences the old holder should it still
 * live (cut off, not dead). Returns the freed sessions that need a harness now.
 */
export async function freeLeasesOf(db: Queryable, holder: string): Promise<{ freed: number; needHarness: string[] }> {
  const { rows } = await db.query<{ session_id: string; needs_harness: boolean }>(
    // The rows locked in the order of their ids first, as an append batch and RenewLeases lock
    // theirs: an UPDATE's own order is the plan's, and two orders can deadlock.
    `WITH locked AS (SELECT session_id FROM sessions WHERE lease_holder = $1 ORDER BY session_id FOR UPDATE)
     UPDATE sessions s SET lease_holder = NULL, lease_expires_at = NULL
       FROM locked l
      WHERE s.session_id = l.session_id AND s.lease_holder = $1
      RETURNING s.session_id, ${NEEDS_HARNESS} AS needs_harness`,
    [holder],
  );
  // Freed for the next harness to take: a takeover of a dead holder's sessions.
  leaseTakeovers.add(rows.length, { via: "holder_gone" });
  return { freed: rows.length, needHarness: rows.filter((r) => r.needs_harness).map((r) => r.session_id) };
}

async function currentLease(db: Queryable, sessionId: string): Promise<{ status: SessionStatus; lease: Lease | undefined }> {
  const { rows } = await db.query<LeaseRow & Pick<SessionRow, "status">>(
    `SELECT status, ${LEASE_COLUMNS} FROM sessions WHERE session_id = $1`,
    [sessionId],
  );
  if (rows[0] === undefined) throw notFound(sessionId);
  return { status: rows[0].status, lease: leaseFromRow(rows[0]) };
}

async function lostLease(db: Queryable, sessionId: string, holder: string, epoch: number): Promise<MhError> {
  const { lease: current } = await currentLease(db, sessionId);
  return new MhError(
    "ABORTED",
    `${holder} no longer holds epoch ${epoch} of session ${sessionId}` +
      (current ? `: ${current.holder} holds epoch ${current.epoch}` : ": the lease is free"),
    { field: "epoch", details: CurrentEpoch.of({ current_epoch: current?.epoch ?? 0 }) },
  );
}
