/**
 * /v1/sessions/{id}/events: list a session's events page by page (by seq, either order,
 * optionally by type and time), and send user events, appended in order and followed by a Wake.
 */
import type { PageCursorResponse } from "@anthropic-ai/sdk/core/pagination";
import type { EventSendParams } from "@anthropic-ai/sdk/resources/beta/sessions/events";
import { fromManagedAgentsParams, toManagedAgentsJson, type ManagedAgentsEventJson } from "@metaharness/events";
import { invalidRequest } from "../errors/api-error.js";
import { decodeCursor, encodeCursor, EVENT_PAGE, isSeqPosition, pageLimit } from "../http/pagination.js";
import { appendUserEvents } from "../sessions/append.js";
import { listEventsQuery, sendEventsBody } from "../schemas/events.js";
import { sessionParams } from "../schemas/sessions.js";
import { readEventPage } from "../sessions/event-page.js";
import { timeFilter } from "./filters.js";
import type { RouteContext } from "./context.js";

type SendBody = Omit<EventSendParams, "betas" | "workspace_id">;
interface SessionParams {
  session_id: string;
}
type EventListQuery = {
  limit?: number;
  page?: string;
  order?: "asc" | "desc";
  types?: string[];
  "created_at[gt]"?: string;
  "created_at[gte]"?: string;
  "created_at[lt]"?: string;
  "created_at[lte]"?: string;
};

export function registerEventRoutes(ctx: RouteContext): void {
  const { router, sessions } = ctx;

  router.add<{ Params: SessionParams; Querystring: EventListQuery }>(
    {
      method: "GET",
      url: "/v1/sessions/:session_id/events",
      sdk: "beta.sessions.events.list",
      summary: "List a session's events in seq order (asc by default). Every event carries its `seq`.",
      response: "PageCursor<BetaManagedAgentsSessionEvent>",
      errors: ["not_found"],
      schema: { params: sessionParams, querystring: listEventsQuery },
    },
    async (req): Promise<PageCursorResponse<ManagedAgentsEventJson>> => {
      const q = req.query;
      const session = await sessions.require(req.tenant, req.params.session_id);
      const cursor = decodeCursor("events", q.page, isSeqPosition);
      const page = await readEventPage(ctx.log, {
        sessionId: session.id,
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
    },
  );

  router.add<{ Params: SessionParams; Body: SendBody }>(
    {
      method: "POST",
      url: "/v1/sessions/:session_id/events",
      sdk: "beta.sessions.events.send",
      summary: "Send user events; they are appended in order, atomically, and the harness is woken.",
      response: "BetaManagedAgentsSendSessionEvents",
      errors: ["not_found", "request_too_large"],
      schema: { params: sessionParams, body: sendEventsBody },
    },
    async (req): Promise<{ data: ManagedAgentsEventJson[] }> => {
      const session = await sessions.require(req.tenant, req.params.session_id);
      if (session.archivedAt !== null) throw invalidRequest("", `session ${session.id} is archived and cannot receive events`);
      const events = req.body.events.map((json, i) => {
        const event = fromManagedAgentsParams(json, `events[${i}]`);
        if (event.type === "user.tool_result" && session.environmentType !== "self_hosted") {
          throw invalidRequest(`events[${i}].type`, "user.tool_result is only valid in sessions of a self_hosted environment");
        }
        return event;
      });
      const stored = await appendUserEvents(ctx, session.id, events, req.log.child({ session_id: session.id }));
      return { data: stored.map(toManagedAgentsJson) };
    },
  );
}
