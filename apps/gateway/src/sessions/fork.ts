/**
 * A session that starts from another session's workspace (issue 29's fork, for retries and
 * evaluations). The SDK's session create has no field for it, so two metadata keys say it:
 * `mh.fork_from_session` (a session of the same tenant) and `mh.fork_at_seq` (an event seq of
 * that session's log, at most its last; its last when omitted, written back into the metadata so
 * the session shows what it started from). Checked here before anything is written; the harness
 * passes the result with every Provision, and the broker restores the source's snapshot.
 */
import type { WorkspaceFork } from "@metaharness/proto";
import { invalidRequest } from "../errors/api-error.js";
import type { Metadata } from "../http/metadata.js";
import { logSession, type LiveDeps } from "./live.js";

export const FORK_SESSION_KEY = "mh.fork_from_session";
export const FORK_SEQ_KEY = "mh.fork_at_seq";

/** The fork the metadata asks for and the metadata to store (with the seq filled in); no fork: undefined. */
export async function workspaceFork(
  ctx: Pick<LiveDeps, "log" | "sessions">,
  tenant: string,
  metadata: Metadata,
  opts: { readonly selfHosted: boolean },
): Promise<{ fork: WorkspaceFork; metadata: Metadata } | undefined> {
  const source = metadata[FORK_SESSION_KEY];
  const at = metadata[FORK_SEQ_KEY];
  if (source === undefined) {
    if (at !== undefined) throw invalidRequest(`metadata.${FORK_SESSION_KEY}`, `is required with metadata.${FORK_SEQ_KEY}`);
    return undefined;
  }
  if (opts.selfHosted) {
    throw invalidRequest(`metadata.${FORK_SESSION_KEY}`, "a session of a self-hosted environment runs its tools on its workers: it has no sandbox to start from another session's workspace");
  }
  const record = await ctx.sessions.get(tenant, source);
  if (record === undefined) throw invalidRequest(`metadata.${FORK_SESSION_KEY}`, `session ${JSON.stringify(source)} not found`);
  const lastSeq = (await logSession(ctx, record.id)).lastSeq;
  if (at === undefined) return { fork: { sessionId: record.id, eventSeq: lastSeq }, metadata: { ...metadata, [FORK_SEQ_KEY]: String(lastSeq) } };
  const seq = /^[1-9][0-9]{0,15}$/.test(at) ? Number(at) : Number.NaN;
  if (!(seq <= lastSeq)) {
    throw invalidRequest(`metadata.${FORK_SEQ_KEY}`, `must be an event seq of session ${record.id}, 1 to ${lastSeq}, got ${JSON.stringify(at)}`);
  }
  return { fork: { sessionId: record.id, eventSeq: seq }, metadata };
}
