/**
 * The MCP call ledger's rows (migrations/004): a call is claimed before it goes upstream, so of
 * two identical calls exactly one is made; the other reads the recorded outcome. The policy
 * around it (waiting for a call another process runs, giving up on one whose process died) is in
 * mcp/call-ledger.ts.
 */
import type { Queryable } from "@metaharness/db";

export interface McpCallKey {
  readonly sessionId: string;
  readonly callId: string;
}

export interface McpCallOutcome {
  readonly text: string[];
  readonly isError: boolean;
}

export type McpClaim =
  | { readonly kind: "claimed" }
  | { readonly kind: "done"; readonly outcome: McpCallOutcome }
  /** `silentMs`: since its owner last touched it (see touchMcpCalls). */
  | { readonly kind: "running"; readonly owner: string; readonly silentMs: number }
  /** The call_id was used for a call of another tool or server. */
  | { readonly kind: "other"; readonly name: string; readonly serverUrl: string };

interface Row {
  claimed: boolean;
  status: "running" | "done";
  owner: string;
  name: string;
  server_url: string;
  result_text: string[] | null;
  is_error: boolean;
  silent_ms: string;
}

export async function claimMcpCall(
  db: Queryable,
  key: McpCallKey,
  call: { readonly serverUrl: string; readonly name: string; readonly owner: string },
): Promise<McpClaim | undefined> {
  // One round trip: the insert claims the call, or the select finds who did. Undefined when a
  // concurrent claim committed after this statement's snapshot (the caller asks again).
  const { rows } = await db.query<Row>(
    `WITH ins AS (
       INSERT INTO mcp_calls (session_id, call_id, server_url, name, status, owner)
       VALUES ($1, $2, $3, $4, 'running', $5)
       ON CONFLICT (session_id, call_id) DO NOTHING
       RETURNING true AS claimed)
     SELECT true AS claimed, 'running' AS status, $5 AS owner, $4 AS name, $3 AS server_url,
            NULL::jsonb AS result_text, false AS is_error, 0::bigint AS silent_ms FROM ins
     UNION ALL
     SELECT false, status, owner, name, server_url, result_text, is_error,
            (extract(epoch FROM now() - heartbeat_at) * 1000)::bigint
       FROM mcp_calls WHERE session_id = $1 AND call_id = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
    [key.sessionId, key.callId, call.serverUrl, call.name, call.owner],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  if (row.claimed) return { kind: "claimed" };
  if (row.name !== call.name || row.server_url !== call.serverUrl) return { kind: "other", name: row.name, serverUrl: row.server_url };
  if (row.status === "done") return { kind: "done", outcome: { text: row.result_text ?? [], isError: row.is_error } };
  return { kind: "running", owner: row.owner, silentMs: Number(row.silent_ms) };
}

/** Records the outcome of a call `owner` ran; a call settled meanwhile by another keeps that record. */
export async function finishMcpCall(db: Queryable, key: McpCallKey, owner: string, outcome: McpCallOutcome): Promise<void> {
  await db.query(
    `UPDATE mcp_calls SET status = 'done', result_text = $4, is_error = $5, finished_at = now()
      WHERE session_id = $1 AND call_id = $2 AND owner = $3 AND status = 'running'`,
    [key.sessionId, key.callId, owner, JSON.stringify(outcome.text), outcome.isError],
  );
}

/** Marks every call `owner` is running as alive now. */
export async function touchMcpCalls(db: Queryable, owner: string): Promise<void> {
  await db.query("UPDATE mcp_calls SET heartbeat_at = now() WHERE owner = $1 AND status = 'running'", [owner]);
}

/** Forgets a claim whose attempt got no answer, so the call can be made again. */
export async function releaseMcpCall(db: Queryable, key: McpCallKey, owner: string): Promise<void> {
  await db.query("DELETE FROM mcp_calls WHERE session_id = $1 AND call_id = $2 AND status = 'running' AND owner = $3", [
    key.sessionId,
    key.callId,
    owner,
  ]);
}

/**
 * Settles a call still running under `owner` as `outcome` (its process is taken for dead), unless
 * it finished meanwhile; returns what is recorded afterwards (undefined: the row is gone).
 */
export async function settleMcpCall(
  db: Queryable,
  key: McpCallKey,
  owner: string,
  outcome: McpCallOutcome,
): Promise<McpCallOutcome | undefined> {
  const { rows } = await db.query<{ result_text: string[] | null; is_error: boolean; status: string }>(
    `WITH upd AS (
       UPDATE mcp_calls SET status = 'done', result_text = $4, is_error = $5, finished_at = now()
        WHERE session_id = $1 AND call_id = $2 AND status = 'running' AND owner = $3
        RETURNING result_text, is_error, status)
     SELECT result_text, is_error, status FROM upd
     UNION ALL
     SELECT result_text, is_error, status FROM mcp_calls
      WHERE session_id = $1 AND call_id = $2 AND NOT EXISTS (SELECT 1 FROM upd)`,
    [key.sessionId, key.callId, owner, JSON.stringify(outcome.text), outcome.isError],
  );
  const row = rows[0];
  if (row === undefined || row.status !== "done") return undefined;
  return { text: row.result_text ?? [], isError: row.is_error };
}

/** Deletes the record of calls started more than `retentionMs` ago; returns how many. */
export async function sweepMcpCalls(db: Queryable, retentionMs: number): Promise<number> {
  const { rowCount } = await db.query(
    "DELETE FROM mcp_calls WHERE started_at < now() - make_interval(secs => $1::double precision / 1000)",
    [retentionMs],
  );
  return rowCount ?? 0;
}
