/**
 * A session's repositories and, while it is not running, its agent configuration: the parts of
 * its metadata that may change after creation (UpdateSession). Checked on create and on every change (ids and mount paths unique, bounded),
 * and changed under the session row's lock, so concurrent changes compose instead of one
 * overwriting the other.
 */
import type { Db } from "@metaharness/db";
import { MhError, invalidArgument } from "@metaharness/errors";
import { isCheckoutName, mountPathKey as mountKey, normalizeRepositoryUrl, repositoryMountPath } from "@metaharness/events";
import { SessionMetadata, SessionStatus, type AgentConfig, type Session, type SessionRepository } from "@metaharness/proto";
import { SESSION_COLUMNS, sessionFromRow, type SessionRow } from "./rows.js";
import { notFound } from "./sessions.js";

export const MAX_REPOSITORIES = 64;
const MAX_TEXT = 2048;

/** Each repository complete, none repeating another's resource_id or mount_path. */
export function checkRepositories(repositories: readonly SessionRepository[], field: string): void {
  if (repositories.length > MAX_REPOSITORIES) throw invalidArgument(field, `at most ${MAX_REPOSITORIES} repositories`);
  const ids = new Map<string, number>();
  const mounts = new Map<string, number>();
  repositories.forEach((r, i) => {
    const at = `${field}[${i}]`;
    for (const [name, value] of [["resource_id", r.resourceId], ["url", r.url], ["mount_path", r.mountPath]] as const) {
      if (value === "") throw invalidArgument(`${at}.${name}`, "required");
      if (value.length > MAX_TEXT) throw invalidArgument(`${at}.${name}`, `at most ${MAX_TEXT} characters`);
    }
    if (r.checkout.length > MAX_TEXT) throw invalidArgument(`${at}.checkout`, `at most ${MAX_TEXT} characters`);
    // As the sandbox broker will check it: a repository taken here but refused there would fail
    // every provisioning of the session.
    if (normalizeRepositoryUrl(r.url) === undefined) throw invalidArgument(`${at}.url`, "must be an http or https URL without user info");
    const mount = repositoryMountPath(r.mountPath);
    if (typeof mount !== "string") throw invalidArgument(`${at}.mount_path`, mount.problem);
    if (r.checkout !== "" && !isCheckoutName(r.checkout)) throw invalidArgument(`${at}.checkout`, "is not a branch, tag or commit name");
    const sameId = ids.get(r.resourceId);
    if (sameId !== undefined) throw invalidArgument(`${at}.resource_id`, `repeats ${field}[${sameId}].resource_id`);
    const sameMount = mounts.get(mount);
    if (sameMount !== undefined) throw invalidArgument(`${at}.mount_path`, `repeats ${field}[${sameMount}].mount_path`);
    ids.set(r.resourceId, i);
    mounts.set(mount, i);
  });
}


/** The list after `put` (replacing by resource_id, in place, or appending) and `remove`. */
export function mergeRepositories(
  current: readonly SessionRepository[],
  put: readonly SessionRepository[],
  remove: readonly string[],
): SessionRepository[] {
  const puts = new Map(put.map((r) => [r.resourceId, r]));
  // Both would drop the put silently and remove the repository the caller meant to change.
  remove.forEach((id, i) => {
    if (puts.has(id)) throw invalidArgument(`remove_repositories[${i}]`, `${id} is also in put_repositories: a change puts a repository or removes it`);
  });
  const removed = new Set(remove);
  const kept = current.filter((r) => !removed.has(r.resourceId)).map((r) => puts.get(r.resourceId) ?? r);
  const present = new Set(kept.map((r) => r.resourceId));
  const next = [...kept, ...put.filter((r) => !present.has(r.resourceId) && !removed.has(r.resourceId))];
  if (next.length > MAX_REPOSITORIES) throw invalidArgument("put_repositories", `a session has at most ${MAX_REPOSITORIES} repositories`);
  put.forEach((r, i) => {
    const clash = next.find((o) => mountKey(o.mountPath) === mountKey(r.mountPath) && o.resourceId !== r.resourceId);
    if (clash !== undefined && !removed.has(r.resourceId)) {
      throw invalidArgument(`put_repositories[${i}].mount_path`, `${r.mountPath} is already the mount path of ${clash.resourceId}`);
    }
  });
  return next;
}

export interface SessionChange {
  readonly putRepositories: readonly SessionRepository[];
  readonly removeRepositories: readonly string[];
  /** A new agent configuration; only while the session is not running. */
  readonly agent?: AgentConfig | undefined;
  /** Archives it: input without a lease epoch is refused from then on (migration 010). */
  readonly archive?: boolean;
}

/** Applies `change` under the session row's lock: concurrent changes compose. */
export async function updateSession(db: Db, sessionId: string, change: SessionChange): Promise<Session> {
  checkRepositories(change.putRepositories, "put_repositories");
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE session_id = $1 FOR UPDATE`, [sessionId]);
    const row = rows[0];
    if (row === undefined) throw notFound(sessionId);
    const archiveOnly = change.archive === true && change.agent === undefined && change.putRepositories.length === 0 && change.removeRepositories.length === 0;
    // A terminated session takes nothing: archiving it changes nothing.
    if (row.status === SessionStatus.SESSION_STATUS_TERMINATED && archiveOnly) return sessionFromRow(row);
    if (row.status === SessionStatus.SESSION_STATUS_TERMINATED) {
      throw new MhError("FAILED_PRECONDITION", `session ${sessionId} is terminated; it can no longer change`, { field: "session_id" });
    }
    // A harness in the middle of a turn keeps the configuration it started with; the change
    // would otherwise apply from an arbitrary step on.
    if (change.agent !== undefined && row.status === SessionStatus.SESSION_STATUS_RUNNING) {
      throw new MhError("FAILED_PRECONDITION", `session ${sessionId} is running; its agent can change once it is idle`, { field: "agent" });
    }
    const metadata = SessionMetadata.fromJSON(row.metadata);
    const next: SessionMetadata = {
      ...metadata,
      repositories: mergeRepositories(metadata.repositories, change.putRepositories, change.removeRepositories),
      ...(change.agent === undefined ? {} : { agent: change.agent }),
    };
    const updated = await tx.query<SessionRow>(
      `UPDATE sessions SET metadata = $2, archived = archived OR $3, updated_at = now() WHERE session_id = $1 RETURNING ${SESSION_COLUMNS}`,
      [sessionId, JSON.stringify(SessionMetadata.toJSON(next)), change.archive === true],
    );
    return sessionFromRow(updated.rows[0]!);
  });
}
