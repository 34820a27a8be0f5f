/**
 * The page's own JSON, beside /v1: a session's events with their trace (GET
 * /ui/api/sessions/:id/events, a slice of the log read forward or backward), and the last
 * activity of a page of sessions (GET /ui/api/activity), which the session object does not
 * carry. Both read the session log directly, only for sessions of the caller's tenant.
 */
import { ApiError, invalidRequest } from "../errors/api-error.js";
import { statusJson } from "../sessions/session-json.js";
import type { SessionLogRpc } from "../clients.js";
import type { SessionStore } from "../sessions/store.js";
import { pathParams, type JsonSchema } from "../http/json-schema.js";
import { logSession } from "../sessions/live.js";
import type { SessionActivity, UiEventSlice } from "./browser/wire.js";
import { toUiEventJson } from "./events.js";

/** Events per slice: the page's first view of a session, and each "earlier events" step. */
export const DEFAULT_EVENT_SLICE = 500;
export const MAX_EVENT_SLICE = 1000;
/** Sessions one activity request may ask about: a page of the session list. */
export const MAX_ACTIVITY_IDS = 100;

const seq = (description: string): JsonSchema => ({ type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description });

export const sessionParams = pathParams("session_id");

export const eventsQuery: JsonSchema = {
  type: "object",
  properties: {
    after_seq: seq("Events after this seq, oldest first."),
    before_seq: seq("Events before this seq (the latest ones when neither is given), oldest first."),
    limit: { type: "integer", minimum: 1, maximum: MAX_EVENT_SLICE },
  },
  additionalProperties: false,
};

export const activityQuery: JsonSchema = {
  type: "object",
  properties: { session_id: { type: "array", items: { type: "string", maxLength: 128 }, maxItems: MAX_ACTIVITY_IDS } },
  required: ["session_id"],
  additionalProperties: false,
};

export interface EventsQuery {
  after_seq?: number;
  before_seq?: number;
  limit?: number;
}

export interface ActivityQuery {
  session_id: string[];
}

/** What the session page's API reads: the log and sessions' records. */
export interface UiApiDeps {
  readonly log: SessionLogRpc;
  readonly sessions: SessionStore;
}

export async function readUiEvents(ctx: UiApiDeps, tenant: string, sessionId: string, q: EventsQuery): Promise<UiEventSlice> {
  if (q.after_seq !== undefined && q.before_seq !== undefined) throw invalidRequest("before_seq", "cannot be combined with after_seq");
  const session = await ctx.sessions.require(tenant, sessionId);
  const slice = await ctx.log.getEvents({
    sessionId: session.id,
    position:
      q.after_seq !== undefined
        ? { $case: "afterSeq", value: q.after_seq }
        : { $case: "beforeSeq", value: q.before_seq ?? Number.MAX_SAFE_INTEGER },
    limit: q.limit ?? DEFAULT_EVENT_SLICE,
    types: [],
  });
  return { data: slice.events.map(toUiEventJson), has_more: slice.hasMore, last_seq: slice.lastSeq };
}

/** The activity of the sessions asked for that belong to `tenant`; others are left out. */
export async function activity(ctx: UiApiDeps, tenant: string, ids: readonly string[]): Promise<{ data: SessionActivity[] }> {
  const found = await Promise.all(
    [...new Set(ids)].map(async (id): Promise<SessionActivity | undefined> => {
      const record = await ctx.sessions.get(tenant, id);
      if (record === undefined) return undefined;
      try {
        const live = await logSession(ctx, record.id);
        return {
          session_id: record.id,
          status: statusJson(live.status),
          last_seq: live.lastSeq,
          last_activity_at: (live.updatedAt ?? live.createdAt)?.toISOString() ?? null,
        };
      } catch (err) {
        // A session the log has lost reads as missing, as on /v1.
        if (err instanceof ApiError && err.error === "not_found") return undefined;
        throw err;
      }
    }),
  );
  return { data: found.filter((a): a is SessionActivity => a !== undefined) };
}
