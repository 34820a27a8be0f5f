/**
 * Mapping between the sessions table and the proto Session, shared by every store module.
 */
import { SessionMetadata, SessionStatus, type Lease, type Session } from "@metaharness/proto";

export interface SessionRow {
  session_id: string;
  metadata: unknown;
  status: SessionStatus;
  last_seq: string;
  lease_holder: string | null;
  lease_epoch: string;
  lease_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export const SESSION_COLUMNS =
  "session_id, metadata, status, last_seq, lease_holder, lease_epoch, lease_expires_at, created_at, updated_at";

export function leaseFromRow(row: Pick<SessionRow, "lease_holder" | "lease_epoch" | "lease_expires_at">): Lease | undefined {
  if (row.lease_holder === null || row.lease_expires_at === null) return undefined;
  return { holder: row.lease_holder, epoch: Number(row.lease_epoch), expiresAt: row.lease_expires_at };
}

export function sessionFromRow(row: SessionRow): Session {
  return {
    sessionId: row.session_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    metadata: SessionMetadata.fromJSON(row.metadata),
    status: row.status,
    lastSeq: Number(row.last_seq),
    lease: liveLease(row),
  };
}

/** The lease as a reader sees it: an expired one is no one's (its holder may still renew it if nobody took over). */
function liveLease(row: SessionRow): Lease | undefined {
  const lease = leaseFromRow(row);
  return lease?.expiresAt !== undefined && lease.expiresAt.getTime() > Date.now() ? lease : undefined;
}

/** Whether, after this event, the session waits for a harness (undefined: unchanged). */
export function awaitingAfter(type: string): boolean | undefined {
  if (type.startsWith("user.")) return true;
  if (type === "session.status_idle" || type === "session.status_terminated") return false;
  return undefined;
}

/** The status a session takes when an event of this type is appended, if it changes it. */
export function statusAfter(type: string): SessionStatus | undefined {
  switch (type) {
    case "session.status_running":
      return SessionStatus.SESSION_STATUS_RUNNING;
    case "session.status_idle":
      return SessionStatus.SESSION_STATUS_IDLE;
    case "session.status_terminated":
      return SessionStatus.SESSION_STATUS_TERMINATED;
    default:
      return undefined;
  }
}
