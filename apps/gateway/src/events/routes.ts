/**
 * /v1/sessions/{id}/events: list a session's events page by page (by seq, either order,
 * optionally by type and time), and send user events, appended in order and followed by a Wake.
 * A self-hosted environment's worker does both with its work item's sessions token, and sends
 * only tool results. An answer or a confirmation must name a tool use that waits for it
 * (answers.ts): a stray one is refused with a 400. Events are served in the SDK's shapes
 * (with our additions only when asked for, http/extensions.ts).
 */
import type { PageCursorResponse } from "@anthropic-ai/sdk/core/pagination";
import type { EventSendParams } from "@anthropic-ai/sdk/resources/beta/sessions/events";
import { fromManagedAgentsParams, toSdkEventJson, type SdkEventJson, type SdkJsonOptions } from "@metaharness/events";
import type { Event } from "@metaharness/proto";
import { ApiError, invalidRequest } from "../errors/api-error.js";
import { extensionsQuery, renderOptions } from "../http/extensions.js";
import { decodeCursor, encodeCursor, EVENT_PAGE, isSeqPosition, pageLimit } from "../http/pagination.js";
import { resolveAnswers } from "./answers.js";
import { appendUserEvents, type AppendDeps } from "../sessions/append.js";
import { requestHands, wantsHands, type HandsDeps } from "../work/hands.js";
import { obj } from "../http/json-schema.js";
import { listEventsQuery, sendEventsBody } from "./schemas.js";
import { sessionParams } from "../sessions/schemas.js";
import { readEventPage } from "./event-page.js";
import { timeFilter } from "../http/filters.js";
import type { Router } from "../http/router.js";
import type { SessionStore } from "../sessions/store.js";

type SendBody = Omit<EventSendParams, "betas" | "workspace_id">;
interface SessionParams {
  session_id: string;
}
/** What a worker (a sessions token) may send. */
const WORKER_EVENTS: ReadonlySet<string> = new Set(["user.tool_result", "user.custom_tool_result"]);
const KEY_OR_WORKER = ["api_key", "work_token"] as const;

/** The events as served; those the SDK has no type for are left out unless asked for. */
export function served(events: readonly Event[], options: SdkJsonOptions): SdkEventJson[] {
  return events.flatMap((e) => toSdkEventJson(e, options) ?? []);
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

/** What the event routes use: sessions' records, and what appending input and asking for hands use. */
export interface EventRouteDeps extends AppendDeps, HandsDeps {
  readonly sessions: SessionStore;
}

/** One page of a session's events (its primary thread's too, thread-routes.ts), as the query asks. */
export async function listEvents(
  ctx: Pick<EventRouteDeps, "log">,
  sessionId: string,
  q: EventListQuery,
  options: SdkJsonOptions,
): Promise<PageCursorResponse<SdkEventJson>> {
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
    data: served(page.events, options),
    next_page: page.next === undefined ? null : encodeCursor("events", page.next),
  };
}

export function registerEventRoutes(router: Router, ctx: EventRouteDeps): void {
  const { sessions } = ctx;

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
    async (req) => listEvents(ctx, (await sessions.requireTarget(req.tenant, req.params.session_id)).id, req.query, renderOptions(req)),
  );

  router.add<{ Params: SessionParams; Body: SendBody; Querystring: { mh_extensions?: boolean } }>(
    {
      method: "POST",
      url: "/v1/sessions/:session_id/events",
      sdk: "beta.sessions.events.send",
      summary: "Send user events; they are appended in order, atomically, and the harness is woken.",
      response: "BetaManagedAgentsSendSessionEvents",
      errors: ["permission_denied", "not_found", "request_too_large"],
      schema: { params: sessionParams, body: sendEventsBody, querystring: obj(extensionsQuery) },
      accepts: KEY_OR_WORKER,
    },
    async (req): Promise<{ data: SdkEventJson[] }> => {
      const session = await sessions.requireTarget(req.tenant, req.params.session_id);
      if (session.archivedAt !== null) throw invalidRequest("", `session ${session.id} is archived and cannot receive events`);
      const parsed = req.body.events.map((json, i) => {
        const event = fromManagedAgentsParams(json, `events[${i}]`);
        if (event.type === "user.tool_result" && session.environmentType !== "self_hosted") {
          throw invalidRequest(`events[${i}].type`, "user.tool_result is only valid in sessions of a self_hosted environment");
        }
        if (req.principal?.kind === "work_token" && !WORKER_EVENTS.has(event.type)) {
          throw new ApiError("permission_denied", `events[${i}].type: a worker's sessions token sends tool results only, not ${event.type}`);
        }
        return event;
      });
      const resolved = await resolveAnswers(ctx.log, session.id, parsed);
      // Both name the session in what they log.
      const stored = await appendUserEvents(ctx, session.id, resolved, req.log);
      if (wantsHands(resolved)) await requestHands(ctx, req.tenant, session, "input", req.log);
      return { data: served(stored, renderOptions(req)) };
    },
  );
}
