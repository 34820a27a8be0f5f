/**
 * The sandboxes table: what each sandbox is, who holds it and how it ended. The database is the
 * record that outlives a broker process: a READY row whose process is gone is exactly what a
 * restarted broker turns into LOST ("broker restarted").
 */
import type { Queryable } from "@metaharness/db";
import { BrokerRef, MhError, SessionRef } from "@metaharness/errors";
import { Resources, SandboxState, type Sandbox } from "@metaharness/proto";

export interface SandboxRow {
  readonly sandboxId: string;
  readonly sessionId: string;
  readonly brokerId: string;
  readonly driver: string;
  readonly handId: string;
  readonly state: SandboxState;
  readonly resources: Resources;
  readonly limits: string;
  readonly reason: string;
  readonly createdAt: Date;
  readonly lastUsedAt: Date;
}

interface RawRow {
  sandbox_id: string;
  session_id: string;
  broker_id: string;
  driver: string;
  hand_id: string;
  state: number;
  resources: Uint8Array;
  limits: string;
  reason: string;
  created_at: Date;
  last_used_at: Date;
}

const COLUMNS =
  "sandbox_id, session_id, broker_id, driver, hand_id, state, resources, limits, reason, created_at, last_used_at";

function toRow(r: RawRow): SandboxRow {
  return {
    sandboxId: r.sandbox_id,
    sessionId: r.session_id,
    brokerId: r.broker_id,
    driver: r.driver,
    handId: r.hand_id,
    state: r.state,
    resources: Resources.decode(r.resources),
    limits: r.limits,
    reason: r.reason,
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
  };
}

export function toSandbox(row: SandboxRow): Sandbox {
  return {
    sandboxId: row.sandboxId,
    sessionId: row.sessionId,
    driver: row.driver,
    state: row.state,
    resources: row.resources,
    createdAt: row.createdAt,
    lastUsedAt: row.lastUsedAt,
    reason: row.reason,
    limits: row.limits,
  };
}

export function notFound(sandboxId: string): MhError {
  return new MhError("NOT_FOUND", `sandbox ${sandboxId} not found`, { field: "sandbox_id" });
}

/** A sandbox another broker instance runs: only that one can act on it. */
export function runByAnotherBroker(sandboxId: string, brokerId: string): MhError {
  return new MhError("FAILED_PRECONDITION", `sandbox ${sandboxId} is run by broker ${brokerId}; call that broker`, {
    field: "sandbox_id",
    details: BrokerRef.of({ broker_id: brokerId }),
  });
}

export interface NewSandbox {
  readonly sandboxId: string;
  readonly sessionId: string;
  readonly brokerId: string;
  readonly driver: string;
  readonly handId: string;
  readonly resources: Resources;
  readonly limits: string;
  /** ProvisionRequest.key: "" for none. */
  readonly provisionKey: string;
}

/**
 * Records a new READY sandbox; `inserted` false when it has a key that a READY sandbox of its
 * session holds already: that one is returned and nothing is written (the caller stops its own).
 */
export async function insertSandbox(pool: Queryable, s: NewSandbox): Promise<{ row: SandboxRow; inserted: boolean }> {
  const values = [s.sandboxId, s.sessionId, s.brokerId, s.driver, s.handId, Buffer.from(Resources.encode(s.resources).finish()), s.limits, s.provisionKey];
  for (let attempt = 0; attempt < 3; attempt++) {
    // One statement: the insert, or (its key taken) the sandbox that holds the key. The unique
    // index on READY keys decides between racing Provisions.
    const { rows } = await pool.query<RawRow & { inserted: boolean }>(
      `WITH ins AS (
         INSERT INTO sandboxes (sandbox_id, session_id, broker_id, driver, hand_id, state, resources, limits, provision_key)
         VALUES ($1, $2, $3, $4, $5, 1, $6, $7, $8)
         ON CONFLICT (session_id, provision_key) WHERE state = 1 AND provision_key <> '' DO NOTHING
         RETURNING ${COLUMNS})
       SELECT ${COLUMNS}, true AS inserted FROM ins
       UNION ALL
       SELECT ${COLUMNS}, false FROM sandboxes
        WHERE session_id = $2 AND provision_key = $8 AND $8 <> '' AND state = 1 AND NOT EXISTS (SELECT 1 FROM ins)`,
      values,
    );
    const row = rows[0];
    if (row !== undefined) return { row: toRow(row), inserted: row.inserted };
    // The holder of the key committed after this statement's snapshot (or ended just then): again.
  }
  throw new MhError("UNAVAILABLE", `sandbox ${s.sandboxId}: key ${s.provisionKey} of session ${s.sessionId} could be neither taken nor read; try again`);
}

/** The READY sandbox of `sessionId` holding `key` (ProvisionRequest.key), if any. */
export async function readyByKey(pool: Queryable, sessionId: string, key: string): Promise<SandboxRow | undefined> {
  const { rows } = await pool.query<RawRow>(`SELECT ${COLUMNS} FROM sandboxes WHERE session_id = $1 AND provision_key = $2 AND state = 1`, [sessionId, key]);
  return rows[0] === undefined ? undefined : toRow(rows[0]);
}

export async function getSandbox(pool: Queryable, sandboxId: string): Promise<SandboxRow | undefined> {
  const { rows } = await pool.query<RawRow>(`SELECT ${COLUMNS} FROM sandboxes WHERE sandbox_id = $1`, [sandboxId]);
  return rows[0] === undefined ? undefined : toRow(rows[0]);
}

export async function listSandboxes(pool: Queryable, sessionId: string, includeEnded: boolean): Promise<SandboxRow[]> {
  const { rows } = await pool.query<RawRow>(
    `SELECT ${COLUMNS} FROM sandboxes
      WHERE ($1 = '' OR session_id = $1) AND ($2 OR state = 1)
      ORDER BY created_at, sandbox_id LIMIT 1000`,
    [sessionId, includeEnded],
  );
  return rows.map(toRow);
}

/** READY -> RELEASED/LOST with its reason; false if it had ended already (the first end wins). */
export async function endSandbox(pool: Queryable, sandboxId: string, state: SandboxState, reason: string): Promise<boolean> {
  const { rowCount } = await pool.query(
    `UPDATE sandboxes SET state = $2, reason = $3, ended_at = now() WHERE sandbox_id = $1 AND state = 1`,
    [sandboxId, state, reason],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * RELEASED/LOST -> READY again, run by `brokerId`: a new process took the sandbox's id, started
 * from its workspace's last snapshot (broker/revive.ts). Throws FAILED_PRECONDITION if it is READY
 * (another revival won).
 */
export async function reviveSandbox(pool: Queryable, sandboxId: string, brokerId: string, limits: string): Promise<void> {
  let rowCount: number | null;
  try {
    ({ rowCount } = await pool.query(
      `UPDATE sandboxes SET state = 1, reason = '', ended_at = NULL, broker_id = $2, limits = $3, last_used_at = now()
       WHERE sandbox_id = $1 AND state <> 1`,
      [sandboxId, brokerId, limits],
    ));
  } catch (err) {
    // Its key (ProvisionRequest.key) went to a sandbox provisioned since: the session uses that one.
    if (isUniqueViolation(err)) {
      throw new MhError("FAILED_PRECONDITION", `sandbox ${sandboxId}: another sandbox of its session took its place`, { field: "sandbox_id" });
    }
    throw err;
  }
  if ((rowCount ?? 0) === 0) throw new MhError("FAILED_PRECONDITION", `sandbox ${sandboxId} is running already`, { field: "sandbox_id" });
}

function isUniqueViolation(err: unknown): boolean {
  return typeof err === "object" && err !== null && "code" in err && err.code === "23505";
}

/**
 * Moves a READY sandbox from `from` to `to`. A retry of a transfer that already happened
 * succeeds again (the holder is `to` already); any other holder is FAILED_PRECONDITION.
 */
/**
 * Gives the sandbox to session `to`, when `from` holds it and this broker (`brokerId`) runs it: the
 * broker that runs it is the one whose sandbox process must change hands with it.
 */
export async function transferSandbox(pool: Queryable, sandboxId: string, from: string, to: string, brokerId: string): Promise<SandboxRow> {
  const { rows } = await pool.query<RawRow>(
    // Its key was its first session's: the sandbox is no other session's default.
    `UPDATE sandboxes SET session_id = $3, provision_key = CASE WHEN session_id = $3 THEN provision_key ELSE '' END
      WHERE sandbox_id = $1 AND state = 1 AND session_id IN ($2, $3) AND broker_id = $4 RETURNING ${COLUMNS}`,
    [sandboxId, from, to, brokerId],
  );
  if (rows[0] !== undefined) return toRow(rows[0]);
  const row = await getSandbox(pool, sandboxId);
  if (row === undefined) throw notFound(sandboxId);
  if (row.state !== SandboxState.SANDBOX_STATE_READY) {
    throw new MhError("FAILED_PRECONDITION", `sandbox ${sandboxId} has ended (${row.reason}); there is nothing to transfer`);
  }
  if (row.brokerId !== brokerId) throw runByAnotherBroker(sandboxId, row.brokerId);
  throw new MhError(
    "FAILED_PRECONDITION",
    `sandbox ${sandboxId} is held by session ${row.sessionId}, not ${from}: only its holder can transfer it`,
    { field: "from_session", details: SessionRef.of({ session_id: row.sessionId }) },
  );
}

/** Records that the sandboxes were used just now (the reaper's clock lives in memory). */
export async function touchSandboxes(pool: Queryable, sandboxIds: readonly string[], at: Date): Promise<void> {
  if (sandboxIds.length === 0) return;
  await pool.query(`UPDATE sandboxes SET last_used_at = $2 WHERE sandbox_id = ANY($1::text[]) AND state = 1`, [
    sandboxIds,
    at,
  ]);
}

/** At start: every sandbox this broker left READY has no process any more. */
export async function loseAfterRestart(pool: Queryable, brokerId: string, reason: string): Promise<SandboxRow[]> {
  const { rows } = await pool.query<RawRow>(
    `UPDATE sandboxes SET state = 3, reason = $2, ended_at = now()
      WHERE broker_id = $1 AND state = 1 RETURNING ${COLUMNS}`,
    [brokerId, reason],
  );
  return rows.map(toRow);
}
