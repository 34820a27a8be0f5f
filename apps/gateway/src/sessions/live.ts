/**
 * A session as the API shows it needs both halves: the gateway's record and the session log's
 * live status. Sessions are read here, so a session the log has lost (which should not happen)
 * reads as not found rather than half-rendered.
 */
import type { BetaManagedAgentsSession } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import { MhError } from "@metaharness/errors";
import type { Session } from "@metaharness/proto";
import { notFound } from "../errors/api-error.js";
import { renderSession } from "./session-json.js";
import type { SessionLogRpc } from "../clients.js";
import type { SessionRecord, SessionStore } from "./store.js";
import { refreshUsage } from "./usage.js";

/** What reading a session whole uses: the log, the gateway's records (usage is cached there), the clock. */
export interface LiveDeps {
  readonly log: SessionLogRpc;
  readonly sessions: SessionStore;
  now(): Date;
}

export async function logSession(ctx: Pick<LiveDeps, "log">, id: string): Promise<Session> {
  try {
    const { session } = await ctx.log.getSession({ sessionId: id });
    if (session === undefined) throw notFound("session", id);
    return session;
  } catch (err) {
    if (err instanceof MhError && err.code === "NOT_FOUND") throw notFound("session", id);
    throw err;
  }
}

export async function viewSession(ctx: LiveDeps, record: SessionRecord, live?: Session): Promise<BetaManagedAgentsSession> {
  const session = live ?? (await logSession(ctx, record.id));
  const usage = await refreshUsage(ctx.log, ctx.sessions, record, session.lastSeq);
  return renderSession(record, session.status, usage, ctx.now());
}
