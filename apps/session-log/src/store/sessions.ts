/**
 * Sessions: create, read, and list with keyset paging and filters.
 */
import type { Queryable } from "@metaharness/db";
import { MhError, invalidArgument } from "@metaharness/errors";
import { SessionMetadata, SessionStatus, type Session } from "@metaharness/proto";
import { SESSION_COLUMNS, sessionFromRow, type SessionRow } from "./rows.js";

export const MAX_PAGE_SIZE = 1000;
const DEFAULT_PAGE_SIZE = 50;
const KNOWN_STATUSES = new Set<SessionStatus>([
  SessionStatus.SESSION_STATUS_IDLE,
  SessionStatus.SESSION_STATUS_RUNNING,
  SessionStatus.SESSION_STATUS_TERMINATED,
]);

export async function createSession(db: Queryable, sessionId: string, metadata: SessionMetadata): Promise<Session> {
  const { rows } = await db.query<SessionRow>(
    `INSERT INTO sessions (session_id, tenant, labels, metadata) VALUES ($1, $2, $3, $4)
     ON CONFLICT (session_id) DO NOTHING RETURNING ${SESSION_COLUMNS}`,
    [sessionId, metadata.tenant, JSON.stringify(metadata.labels), JSON.stringify(SessionMetadata.toJSON(metadata))],
  );
  const row = rows[0];
  if (row === undefined) {
    throw new MhError("ALREADY_EXISTS", `session ${sessionId} already exists`, { field: "session_id" });
  }
  return sessionFromRow(row);
}

export async function getSession(db: Queryable, sessionId: string): Promise<Session> {
  const { rows } = await db.query<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE session_id = $1`, [
    sessionId,
  ]);
  const row = rows[0];
  if (row === undefined) throw notFound(sessionId);
  return sessionFromRow(row);
}

/** A session's last seq and whether it is terminated, read alone (a watch from its head). */
export async function sessionHead(db: Queryable, sessionId: string): Promise<{ lastSeq: number; terminated: boolean }> {
  const { rows } = await db.query<{ last_seq: string | number; status: SessionStatus }>("SELECT last_seq, status FROM sessions WHERE session_id = $1", [sessionId]);
  const row = rows[0];
  if (row === undefined) throw notFound(sessionId);
  return { lastSeq: Number(row.last_seq), terminated: row.status === SessionStatus.SESSION_STATUS_TERMINATED };
}

export function notFound(sessionId: string): MhError {
  return new MhError("NOT_FOUND", `session ${sessionId} not found`, { field: "session_id" });
}

export interface ListFilter {
  readonly pageSize: number;
  readonly pageToken: string;
  readonly tenant: string;
  readonly status: SessionStatus;
  readonly labels: Readonly<Record<string, string>>;
  readonly orphaned: boolean;
}

/** A session that needs a harness driving it (running, or input waiting): SQL on `sessions`. */
export const NEEDS_HARNESS = "(status = 2 OR awaiting_harness)";

export async function listSessions(
  db: Queryable,
  filter: ListFilter,
): Promise<{ sessions: Session[]; nextPageToken: string }> {
  if (filter.pageSize > MAX_PAGE_SIZE) throw invalidArgument("page_size", `at most ${MAX_PAGE_SIZE}`);
  const pageSize = filter.pageSize === 0 ? DEFAULT_PAGE_SIZE : filter.pageSize;
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (clause: (p: string) => string, value: unknown): void => {
    params.push(value);
    where.push(clause(`$${params.length}`));
  };
  if (filter.pageToken !== "") add((p) => `ord < ${p}`, decodePageToken(filter.pageToken));
  if (filter.tenant !== "") add((p) => `tenant = ${p}`, filter.tenant);
  if (filter.status !== SessionStatus.SESSION_STATUS_UNSPECIFIED) {
    if (!KNOWN_STATUSES.has(filter.status)) {
      throw invalidArgument("status", `unknown status ${filter.status}`);
    }
    add((p) => `status = ${p}`, filter.status);
  }
  if (Object.keys(filter.labels).length > 0) add((p) => `labels @> ${p}::jsonb`, JSON.stringify(filter.labels));
  if (filter.orphaned) {
    where.push(`${NEEDS_HARNESS} AND (lease_holder IS NULL OR lease_expires_at <= now())`);
  }
  params.push(pageSize + 1);
  const { rows } = await db.query<SessionRow & { ord: string }>(
    `SELECT ord, ${SESSION_COLUMNS} FROM sessions ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}
     ORDER BY ord DESC LIMIT $${params.length}`,
    params,
  );
  const page = rows.slice(0, pageSize);
  const last = page[page.length - 1];
  return {
    sessions: page.map(sessionFromRow),
    nextPageToken: rows.length > pageSize && last !== undefined ? encodePageToken(last.ord) : "",
  };
}

function encodePageToken(ord: string): string {
  return Buffer.from(`o:${ord}`).toString("base64url");
}

function decodePageToken(token: string): string {
  const text = Buffer.from(token, "base64url").toString("utf8");
  const match = /^o:(\d{1,19})$/.exec(text);
  // A bigint: 19 digits may still be above its largest value (a Postgres error, not a client's).
  if (!match?.[1] || BigInt(match[1]) > 2n ** 63n - 1n) throw invalidArgument("page_token", "not a token this service issued");
  return match[1];
}
