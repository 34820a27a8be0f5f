/**
 * Archiving a session (sessions.archive, and threads.archive of its primary thread): the session
 * log first, which from then on refuses the session's input whichever gateway instance sends it
 * (UpdateSessionRequest.archive), then the gateway's record. An instance's own check of archival
 * (events/routes.ts, from memory or the row) and its append are two steps: a send checked just
 * before the archive committed, its append still on the way, once landed after the archive had
 * answered (test/integration/gateway/archive-race.test.ts).
 */
import type { SessionLogRpc } from "../clients.js";
import type { SessionRecord, SessionStore } from "./store.js";

export async function archiveSession(log: SessionLogRpc, sessions: SessionStore, tenant: string, id: string, now: Date): Promise<SessionRecord> {
  // The tenant's session, or 404: the log answers any session it is named.
  const target = await sessions.requireTarget(tenant, id);
  await log.updateSession({ sessionId: target.id, putRepositories: [], removeRepositories: [], agent: undefined, archive: true });
  return sessions.archive(tenant, target.id, now);
}
