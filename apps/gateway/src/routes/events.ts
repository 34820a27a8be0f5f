/**
 * /v1/sessions/{id}/events: list a session's events page by page (by seq, either order,
 * optionally by type and time), and send user events, appended in order and followed by a Wake.
 * A self-hosted environment's worker does both with its work item's sessions token, and sends
 * only tool results; each user.tool_result is stored as `<tool_use_id>.result`, the id the harness
 * gives its own answer (an interrupt's, or a timeout's), so a call is answered once: a later
 * answer (another worker's, after the harness gave up) is a duplicate and changes nothing.
 */
import type { PageCursorResponse } from "@anthropic-ai/sdk/core/pagination";
import type { EventSendParams } from "@anthropic-ai/sdk/resources/beta/sessions/events";
import { fromManagedAgentsParams, isValidEventId, toManagedAgentsJson, type ManagedAgentsEventJson } from "@metaharness/events";
import type { Event } from "@metaharness/proto";
import { ApiError, invalidRequest } from "../errors/api-error.js";
import { decodeCursor, encodeCursor, EVENT_PAGE, isSeqPosition, pageLimit } from "../http/pagination.js";
import { appendUserEvents } from "../sessions/append.js";
import { requestHands, wantsHands } from "../sessions/hands.js";
import { listEventsQuery, sendEventsBody } from "../schemas/events.js";
import { sessionParams } from "../schemas/sessions.js";
import { readEventPage } from "../sessions/event-page.js";
import { timeFilter } from "./filters.js";
import type { RouteContext } from "./context.js";

type SendBody = Omit<EventSendParams, "betas" | "workspace_id">;
interface SessionParams {
  session_id: string;
}
/** What a worker (a sessions token) may send. */
const WORKER_EVENTS: ReadonlySet<string> = new Set(["user.tool_result", "user.custom_tool_result"]);
const KEY_OR_WORKER = ["api_key", "work_token"] as const;

/** A user.tool_result under the id of the call's one answer. */
function oneAnswer(event: Event): Event {
  if (event.payload?.$case !== "userToolResult") return event;
  const id = `${event.payload.value.toolUseId}.result`;
  return isValidEventId(id) ? { ...event, id } : event;
}

export type EventListQuery = {
  limit?: number;
  page?: string;
  order?: "asc" | "desc";
  types?: string[];
  "created_at[gt]"?: string;
  "created_at[gte]"?: string;
  "created_at[lt]"?: string;
  "created_at[lte]"?: string;
};

/** One page of a session's events (its primary thread's too, routes/threads.ts), as the query asks. */
export async function listEvents(ctx: RouteContext, sessionId: string, q: EventListQuery): Promise<PageCursorResponse<ManagedAgentsEventJson>> {
  const cursor = decodeCursor("events", q.page, isSeqPosition);
  const page = await readEventPage(ctx.log, {
    sessionId,
    order: q.order ?? "asc",
    limit: pageLimit(q.limit, EVENT_PAGE),
    after: cursor?.position,
    types: q.types ?? [],
    time: { gt: timeFilter(q, "gt"), gte: timeFilter(q, "gte"), lt: timeFilter(q, "lt"), lte: timeFilter(q, "lte") },
  });
  return {
    data: page.events.map(toManagedAgentsJson),
    next_page: page.next === undefined ? null : encodeCursor("events", page.next),
  };
}

export function registerEventRoutes(ctx: RouteContext): void {
  const { router, sessions } = ctx;

  router.add<{ Params: SessionParams; Querystring: EventListQuery }>(
    {
      method: "GET",
      url: "/v1/sessions/:session_id/events",
      sdk: "beta.sessions.events.list",
      summary: "List a session's events in seq order (asc by default). Every event carries its `seq`.",
      response: "PageCursor<BetaManagedAgentsSessionEvent>",
      errors: ["permission_denied", "not_found"],
      schema: { params: sessionParams, querystring: listEventsQuery },
      accepts: KEY_OR_WORKER,
    },
    async (req) => listEvents(ctx, (await sessions.require(req.tenant, req.params.session_id)).id, req.query),
  );

  router.add<{ Params: SessionParams; Body: SendBody }>(
    {
      method: "POST",
      url: "/v1/sessions/:session_id/events",
      sdk: "beta.sessions.events.send",
      summary: "Send user events; they are appended in order, atomically, and the harness is woken.",
      response: "BetaManagedAgentsSendSessionEvents",
      errors: ["permission_denied", "not_found", "request_too_large"],
      schema: { params: sessionParams, body: sendEventsBody },
      accepts: KEY_OR_WORKER,
    },
    async (req): Promise<{ data: ManagedAgentsEventJson[] }> => {
      const session = await sessions.require(req.tenant, req.params.session_id);
      if (session.archivedAt !== null) throw invalidRequest("", `session ${session.id} is archived and cannot receive events`);
      const events = req.body.events.map((json, i) => {
        const event = fromManagedAgentsParams(json, `events[${i}]`);
        if (event.type === "user.tool_result" && session.environmentType !== "self_hosted") {
          throw invalidRequest(`events[${i}].type`, "user.tool_result is only valid in sessions of a self_hosted environment");
        }
        if (req.principal?.kind === "work_token" && !WORKER_EVENTS.has(event.type)) {
          throw new ApiError("permission_denied", `events[${i}].type: a worker's sessions token sends tool results only, not ${event.type}`);
        }
        return oneAnswer(event);
      });
      const logger = req.log.child({ session_id: session.id });
      const stored = await appendUserEvents(ctx, session.id, events, logger);
      if (wantsHands(events)) await requestHands(ctx, req.tenant, session, "input", logger);
      return { data: stored.map(toManagedAgentsJson) };
    },
  );
}
