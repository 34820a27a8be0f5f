/**
 * The call ledger: Execute's idempotency by session and call_id (the tool_use id). A call is
 * claimed (INSERT ... ON CONFLICT DO NOTHING) before anything runs, so of two identical calls
 * exactly one runs; the other reads the recorded outcome. The key is the session's, not the
 * sandbox's: two harnesses racing for a session (one of them late, its lease taken over) may each
 * name a sandbox of their own for the same tool_use, and it must still run once. A call still
 * "running" under an earlier incarnation of the broker that runs its sandbox was interrupted by a
 * restart: its outcome is unknown and it is never run again.
 */
import type { Queryable } from "@metaharness/db";

export interface CallOutcome {
  readonly output: string;
  readonly isError: boolean;
  readonly exitCode: number;
  readonly durationMs: number;
  readonly truncated: boolean;
}

export const INTERRUPTED_OUTPUT = "the outcome of this call is unknown: the broker restarted while it ran";

export type Claim =
  | { readonly kind: "claimed" }
  | { readonly kind: "done"; readonly outcome: CallOutcome }
  | { readonly kind: "running"; readonly incarnation: string; readonly sandboxId: string; readonly brokerId: string };

interface CallRow {
  status: "running" | "done";
  incarnation: string;
  sandbox_id: string;
  /** The broker that runs the sandbox the call was claimed on ("" if it is gone). */
  broker_id: string;
  // bytea: a Buffer from pg, a Uint8Array from PGlite.
  output: Uint8Array;
  is_error: boolean;
  exit_code: number;
  duration_ms: number;
  truncated: boolean;
}

function outcomeOf(r: CallRow): CallOutcome {
  return {
    output: Buffer.from(r.output).toString("utf8"),
    isError: r.is_error,
    exitCode: r.exit_code,
    durationMs: r.duration_ms,
    truncated: r.truncated,
  };
}

/** A call: the ledger's key is (sessionId, callId); sandboxId is where this request runs it. */
export interface CallKey {
  readonly sessionId: string;
  readonly callId: string;
  readonly sandboxId: string;
}

function claimOf(r: CallRow): Claim {
  return r.status === "done"
    ? { kind: "done", outcome: outcomeOf(r) }
    : { kind: "running", incarnation: r.incarnation, sandboxId: r.sandbox_id, brokerId: r.broker_id };
}

export async function claimCall(
  pool: Queryable,
  key: CallKey,
  call: { readonly name: string; readonly incarnation: string },
): Promise<Claim> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const claim = await tryClaim(pool, key, call);
    if (claim !== undefined) return claim;
    // Someone else's claim committed after our statement's snapshot: a fresh read sees it.
    const seen = await readCall(pool, key);
    if (seen !== undefined) return seen;
  }
  throw new Error(`call ${key.callId} of session ${key.sessionId} could be neither claimed nor read`);
}

async function tryClaim(
  pool: Queryable,
  key: CallKey,
  call: { readonly name: string; readonly incarnation: string },
): Promise<Claim | undefined> {
  // One round trip: the insert claims the call, or the select finds who did.
  const { rows } = await pool.query<CallRow & { claimed: boolean }>(
    `WITH ins AS (
       INSERT INTO sandbox_calls (sandbox_id, call_id, session_id, name, status, incarnation)
       VALUES ($1, $2, $3, $4, 'running', $5)
       ON CONFLICT (session_id, call_id) DO NOTHING
       RETURNING true AS claimed)
     SELECT true AS claimed, 'running' AS status, $5 AS incarnation, $1 AS sandbox_id, '' AS broker_id, ''::bytea AS output,
            false AS is_error, 0 AS exit_code, 0 AS duration_ms, false AS truncated FROM ins
     UNION ALL
     SELECT false, ${CALL_COLUMNS} ${fromCall("$3", "$2")} AND NOT EXISTS (SELECT 1 FROM ins)`,
    [key.sandboxId, key.callId, key.sessionId, call.name, call.incarnation],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  return row.claimed ? { kind: "claimed" } : claimOf(row);
}

const CALL_COLUMNS = "c.status, c.incarnation, c.sandbox_id, coalesce(s.broker_id, '') AS broker_id, c.output, c.is_error, c.exit_code, c.duration_ms, c.truncated";
/** The call whose session and call id are the parameters named, with its sandbox's broker. */
const fromCall = (session: string, call: string): string =>
  `FROM sandbox_calls c LEFT JOIN sandboxes s ON s.sandbox_id = c.sandbox_id WHERE c.session_id = ${session} AND c.call_id = ${call}`;

/** Records the outcome and the sandbox's last use together. */
export async function finishCall(pool: Queryable, key: CallKey, outcome: CallOutcome): Promise<void> {
  await pool.query(
    `WITH c AS (
       UPDATE sandbox_calls SET status = 'done', output = $3, is_error = $4, exit_code = $5, duration_ms = $6,
              truncated = $7, finished_at = now()
         WHERE session_id = $8 AND call_id = $2)
     UPDATE sandboxes SET last_used_at = now() WHERE sandbox_id = $1 AND state = 1`,
    [
      key.sandboxId,
      key.callId,
      Buffer.from(outcome.output, "utf8"),
      outcome.isError,
      outcome.exitCode,
      outcome.durationMs,
      outcome.truncated,
      key.sessionId,
    ],
  );
}

/** The recorded state of a call, or undefined if it was never claimed. */
export async function readCall(pool: Queryable, key: CallKey): Promise<Claim | undefined> {
  const { rows } = await pool.query<CallRow>(`SELECT ${CALL_COLUMNS} ${fromCall("$1", "$2")}`, [key.sessionId, key.callId]);
  const row = rows[0];
  return row === undefined ? undefined : claimOf(row);
}

/**
 * Settles a call of an earlier incarnation as interrupted, unless it got an outcome meanwhile;
 * returns what is recorded afterwards.
 */
export async function interruptCall(pool: Queryable, key: CallKey, incarnation: string): Promise<CallOutcome> {
  const outcome: CallOutcome = { output: INTERRUPTED_OUTPUT, isError: true, exitCode: -1, durationMs: 0, truncated: false };
  await pool.query(
    `UPDATE sandbox_calls SET status = 'done', output = $3, is_error = true, exit_code = -1, finished_at = now()
      WHERE session_id = $1 AND call_id = $2 AND status = 'running' AND incarnation <> $4`,
    [key.sessionId, key.callId, Buffer.from(INTERRUPTED_OUTPUT, "utf8"), incarnation],
  );
  const now = await readCall(pool, key);
  return now?.kind === "done" ? now.outcome : outcome;
}

/** At start: every call of this broker's sandboxes that was running has an unknown outcome. */
export async function interruptAfterRestart(pool: Queryable, brokerId: string, incarnation: string): Promise<number> {
  const { rowCount } = await pool.query(
    `UPDATE sandbox_calls c SET status = 'done', output = $3, is_error = true, exit_code = -1, finished_at = now()
       FROM sandboxes s
      WHERE c.sandbox_id = s.sandbox_id AND s.broker_id = $1 AND c.status = 'running' AND c.incarnation <> $2`,
    [brokerId, incarnation, Buffer.from(INTERRUPTED_OUTPUT, "utf8")],
  );
  return rowCount ?? 0;
}
