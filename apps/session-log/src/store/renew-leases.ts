/**
 * RenewLeases: several of one holder's leases renewed by one statement, each as renewLease would
 * (leases.ts): extended when the holder and epoch are still the session's, even just after expiry
 * if nobody took it; otherwise that lease's outcome is ABORTED with the session's epoch now, or
 * NOT_FOUND. A harness renewed each of its sessions with its own UPDATE every TTL/3; a session
 * kept after its turn (MH_IDLE_LINGER_MS) made that a statement per lingering session and second.
 */
import type { Queryable } from "@metaharness/db";
import { invalidArgument } from "@metaharness/errors";
import { LeaseRenewal_Outcome, type LeaseRenewal, type LeaseToRenew } from "@metaharness/proto";
import { requireSessionId } from "@metaharness/events";
import { checkArgs } from "./leases.js";

/** The most leases one call renews (a harness sends more in several calls). */
export const MAX_RENEWALS = 1000;

interface RenewalRow {
  session_id: string;
  found: boolean;
  renewed: boolean;
  holder_now: string | null;
  lease_epoch: string | null;
  lease_expires_at: Date | null;
}

/**
 * One statement: `locked` takes the rows the UPDATE will renew in the order of their ids, as an
 * append batch does (mh_append's SELECT ... ORDER BY session_id FOR UPDATE), so a renewal and a
 * batch waiting for each other's rows cannot deadlock (they did under load: Postgres broke the
 * tie after its 1 s deadlock_timeout by failing one of them, a 1 s stall on every session of
 * both); the UPDATE renews what is still the caller's; the outer SELECT reads, from the
 * statement's snapshot (before the UPDATE), the epoch of every session it did not renew.
 */
const RENEW_LEASES_SQL = `
  WITH wanted AS (
    SELECT * FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS w(session_id, epoch, ord)
  ), locked AS (
    SELECT s.session_id
      FROM sessions s JOIN wanted w ON s.session_id = w.session_id
     WHERE s.lease_holder = $3 AND s.lease_epoch = w.epoch
     ORDER BY s.session_id
       FOR UPDATE OF s
  ), renewed AS (
    UPDATE sessions s SET lease_expires_at = now() + make_interval(secs => $4::double precision / 1000)
      FROM wanted w, locked l
     WHERE s.session_id = w.session_id AND l.session_id = w.session_id AND s.lease_holder = $3 AND s.lease_epoch = w.epoch
     RETURNING s.session_id, s.lease_expires_at
  )
  SELECT w.session_id, s.session_id IS NOT NULL AS found, r.session_id IS NOT NULL AS renewed,
         s.lease_holder AS holder_now, s.lease_epoch, r.lease_expires_at
    FROM wanted w
    LEFT JOIN renewed r ON r.session_id = w.session_id
    LEFT JOIN sessions s ON s.session_id = w.session_id
   ORDER BY w.ord`;

export async function renewLeases(db: Queryable, holder: string, ttlMs: number, leases: readonly LeaseToRenew[]): Promise<LeaseRenewal[]> {
  checkArgs(holder, ttlMs);
  if (leases.length > MAX_RENEWALS) throw invalidArgument("leases", `at most ${MAX_RENEWALS} per call, got ${leases.length}`);
  const seen = new Set<string>();
  leases.forEach((l, i) => {
    requireSessionId(l.sessionId, `leases[${i}].session_id`);
    if (seen.has(l.sessionId)) throw invalidArgument(`leases[${i}].session_id`, `${l.sessionId} is named twice`);
    seen.add(l.sessionId);
  });
  if (leases.length === 0) return [];
  const { rows } = await db.query<RenewalRow>(RENEW_LEASES_SQL, [
    leases.map((l) => l.sessionId),
    leases.map((l) => String(l.epoch)),
    holder,
    ttlMs,
  ]);
  return rows.map((row): LeaseRenewal => {
    if (row.renewed && row.lease_expires_at !== null) {
      return { sessionId: row.session_id, outcome: LeaseRenewal_Outcome.OUTCOME_RENEWED, lease: { holder, epoch: Number(row.lease_epoch), expiresAt: row.lease_expires_at }, currentEpoch: 0 };
    }
    if (!row.found) return { sessionId: row.session_id, outcome: LeaseRenewal_Outcome.OUTCOME_NOT_FOUND, lease: undefined, currentEpoch: 0 };
    // As RenewLease says it: a free lease (released, or its holder gone) is no epoch's.
    const currentEpoch = row.holder_now === null ? 0 : Number(row.lease_epoch);
    return { sessionId: row.session_id, outcome: LeaseRenewal_Outcome.OUTCOME_ABORTED, lease: undefined, currentEpoch };
  });
}
