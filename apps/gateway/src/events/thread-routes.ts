/**
 * /v1/sessions/{id}/threads: a session's execution threads. Every session has one primary thread;
 * a multiagent session adds one per sub-agent, and Meta-Harness serves no multiagent sessions
 * (`multiagent` is refused at creation), so each session here has exactly its primary thread.
 * It is the session seen as a thread: same agent, status, usage and events, and an id derived
 * from the session's (`sthr_` and the session id's suffix), so nothing more is stored. Archiving
 * it archives the session: a session whose only thread is archived is an archived session.
 */
import type { PageCursorResponse } from "@anthropic-ai/sdk/core/pagination";
import type { BetaManagedAgentsSession } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import type { BetaManagedAgentsSessionThread, BetaManagedAgentsSessionThreadStatus } from "@anthropic-ai/sdk/resources/beta/sessions/threads/threads";
import { ApiError } from "../errors/api-error.js";
import { extensionsQuery, renderOptions } from "../http/extensions.js";
import { decodeCursor, OBJECT_PAGE, pageLimit } from "../http/pagination.js";
import { obj, pageQuery, pathParams } from "../http/json-schema.js";
import { streamEventsQuery } from "./schemas.js";
import { sessionParams, SESSION_STATUSES } from "../sessions/schemas.js";
import { viewSession, type LiveDeps } from "../sessions/live.js";
import { archiveSession } from "../sessions/archive.js";
import type { SessionRecord } from "../sessions/store.js";
import type { Router } from "../http/router.js";
import { listEvents } from "./routes.js";
import { streamSession, type StreamDeps, type StreamQuery } from "./stream-route.js";

const threadParams = pathParams("session_id", "thread_id");
const listThreadsQuery = obj({ ...pageQuery, statuses: { type: "array", items: { enum: SESSION_STATUSES } } });
const threadEventsQuery = obj({ ...pageQuery, ...extensionsQuery });
const KEY_OR_WORKER = ["api_key", "work_token"] as const;

interface ThreadPath {
  session_id: string;
  thread_id: string;
}

/** The id of a session's primary thread. */
export function primaryThreadId(sessionId: string): string {
  return `sthr_${sessionId.replace(/^sesn_/, "")}`;
}

/** The session as its primary thread. */
function asThread(session: BetaManagedAgentsSession): BetaManagedAgentsSessionThread {
  const { multiagent: _none, ...agent } = session.agent;
  const { usage, stats } = session;
  return {
    id: primaryThreadId(session.id),
    type: "session_thread",
    session_id: session.id,
    agent,
    archived_at: session.archived_at,
    created_at: session.created_at,
    updated_at: session.updated_at,
    parent_thread_id: null,
    status: session.status,
    stats: { active_seconds: stats.active_seconds, duration_seconds: stats.duration_seconds },
    usage: {
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
      cache_read_input_tokens: usage.cache_read_input_tokens,
      cache_creation: usage.cache_creation,
    },
    workflow_run_id: null,
  };
}

export function registerThreadRoutes(router: Router, ctx: LiveDeps & StreamDeps): void {
  const { sessions } = ctx;

  /** The session whose primary thread `thread_id` is; 404 for any other thread id. */
  const requireThread = async (tenant: string, p: ThreadPath): Promise<SessionRecord> => {
    const record = await sessions.require(tenant, p.session_id);
    if (p.thread_id !== primaryThreadId(record.id)) {
      throw new ApiError("not_found", `session ${record.id} has no thread ${p.thread_id} (its only thread is ${primaryThreadId(record.id)})`);
    }
    return record;
  };

  router.add<{ Params: { session_id: string }; Querystring: { limit?: number; page?: string; statuses?: BetaManagedAgentsSessionThreadStatus[] } }>(
    {
      method: "GET",
      url: "/v1/sessions/:session_id/threads",
      sdk: "beta.sessions.threads.list",
      summary: "List a session's threads: its primary thread (multiagent sessions, with more, are not served).",
      response: "PageCursor<BetaManagedAgentsSessionThread>",
      errors: ["permission_denied", "not_found"],
      schema: { params: sessionParams, querystring: listThreadsQuery },
      accepts: KEY_OR_WORKER,
    },
    async (req): Promise<PageCursorResponse<BetaManagedAgentsSessionThread>> => {
      pageLimit(req.query.limit, OBJECT_PAGE);
      // One thread, on the first page: next_page is always null, so no cursor of this list exists,
      // and a page that is not empty (the SDK sends a null one as empty) is a 400 naming it.
      decodeCursor("threads", req.query.page, (_position: unknown): _position is never => false);
      const thread = asThread(await viewSession(ctx, await sessions.require(req.tenant, req.params.session_id)));
      const wanted = req.query.statuses === undefined || req.query.statuses.length === 0 || req.query.statuses.includes(thread.status);
      return { data: wanted ? [thread] : [], next_page: null };
    },
  );

  router.add<{ Params: ThreadPath }>(
    {
      method: "GET",
      url: "/v1/sessions/:session_id/threads/:thread_id",
      sdk: "beta.sessions.threads.retrieve",
      summary: "Retrieve a session's thread (its primary thread).",
      response: "BetaManagedAgentsSessionThread",
      errors: ["permission_denied", "not_found"],
      schema: { params: threadParams },
      accepts: KEY_OR_WORKER,
    },
    async (req): Promise<BetaManagedAgentsSessionThread> => asThread(await viewSession(ctx, await requireThread(req.tenant, req.params))),
  );

  router.add<{ Params: ThreadPath }>(
    {
      method: "POST",
      url: "/v1/sessions/:session_id/threads/:thread_id/archive",
      sdk: "beta.sessions.threads.archive",
      summary: "Archive a thread: the primary thread, the session's only one, is archived with its session (as sessions.archive).",
      response: "BetaManagedAgentsSessionThread",
      errors: ["not_found"],
      schema: { params: threadParams },
    },
    async (req): Promise<BetaManagedAgentsSessionThread> => {
      const record = await requireThread(req.tenant, req.params);
      return asThread(await viewSession(ctx, await archiveSession(ctx.log, sessions, req.tenant, record.id, ctx.now())));
    },
  );

  router.add<{ Params: ThreadPath; Querystring: { limit?: number; page?: string } }>(
    {
      method: "GET",
      url: "/v1/sessions/:session_id/threads/:thread_id/events",
      sdk: "beta.sessions.threads.events.list",
      summary: "List a thread's events in seq order: the primary thread's are its session's.",
      response: "PageCursor<BetaManagedAgentsSessionEvent>",
      errors: ["permission_denied", "not_found"],
      schema: { params: threadParams, querystring: threadEventsQuery },
      accepts: KEY_OR_WORKER,
    },
    async (req) =>
      listEvents(ctx, (await requireThread(req.tenant, req.params)).id, { limit: req.query.limit, page: req.query.page }, renderOptions(req)),
  );

  router.add<{ Params: ThreadPath; Querystring: StreamQuery }>(
    {
      method: "GET",
      url: "/v1/sessions/:session_id/threads/:thread_id/stream",
      sdk: "beta.sessions.threads.events.stream",
      summary: "Stream a thread's events as SSE: the primary thread's are its session's (as events/stream).",
      response: "BetaManagedAgentsStreamSessionThreadEvents",
      errors: ["permission_denied", "not_found"],
      schema: { params: threadParams, querystring: streamEventsQuery },
      accepts: KEY_OR_WORKER,
      stream: true,
    },
    async (req, reply) => {
      const record = await requireThread(req.tenant, req.params);
      await streamSession(ctx, req, reply, record.id);
    },
  );
}
