/**
 * /v1/sessions: create, retrieve, update (update.ts: title, metadata, budget, and the agent's
 * tools and MCP servers while the session is not running), list in both directions,
 * archive, delete. Status and usage come from the session log; the rest from the gateway's
 * record. Deleting terminates the session in the log (a running one is interrupted first), so
 * no harness keeps working for a session nobody can reach, and deletes its repositories' tokens.
 */
import type { BidirectionalPageCursorResponse } from "@anthropic-ai/sdk/core/pagination";
import type { BetaManagedAgentsDeletedSession, BetaManagedAgentsSession } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import { newEvent } from "@metaharness/events";
import { SessionStatus, type Event } from "@metaharness/proto";
import { decodeCursor, encodeCursor, isTimeIdPosition, OBJECT_PAGE, pageLimit } from "../http/pagination.js";
import { statusJson, type SessionStatusJson } from "./session-json.js";
import { createSession, type CreateDeps, type SessionCreateBody } from "./create.js";
import { updateSession, type SessionUpdateBody } from "./update.js";
import { dropVault } from "./repository-tokens.js";
import { archiveSession } from "./archive.js";
import { logSession, viewSession } from "./live.js";
import { createSessionBody, listSessionsQuery, sessionParams, updateSessionBody } from "./schemas.js";
import { timeFilter, type TimeOp } from "../http/filters.js";
import type { Router } from "../http/router.js";

interface SessionParams {
  session_id: string;
}
type SessionListQuery = {
  limit?: number;
  page?: string;
  agent_id?: string;
  agent_version?: number;
  deployment_id?: string;
  include_archived?: boolean;
  memory_store_id?: string;
  order?: "asc" | "desc";
  statuses?: SessionStatusJson[];
  "created_at[gt]"?: string;
  "created_at[gte]"?: string;
  "created_at[lt]"?: string;
  "created_at[lte]"?: string;
};

const TIME_OPS: ReadonlyArray<readonly [TimeOp, ">" | ">=" | "<" | "<="]> = [
  ["gt", ">"],
  ["gte", ">="],
  ["lt", "<"],
  ["lte", "<="],
];

export function registerSessionRoutes(router: Router, ctx: CreateDeps): void {
  const { sessions } = ctx;

  router.add<{ Body: SessionCreateBody }>(
    {
      method: "POST",
      url: "/v1/sessions",
      sdk: "beta.sessions.create",
      summary: "Create a session of an agent version in an environment; initial user.message events are sent at once.",
      response: "BetaManagedAgentsSession",
      errors: ["invalid_metadata", "not_found", "environment_not_found", "environment_archived", "request_too_large", "credential_vault_unconfigured", "model_not_budgetable"],
      schema: { body: createSessionBody },
    },
    (req) => createSession(ctx, req.tenant, req.body, req.log),
  );

  router.add<{ Params: SessionParams }>(
    {
      method: "GET",
      url: "/v1/sessions/:session_id",
      sdk: "beta.sessions.retrieve",
      summary: "Retrieve a session with its status and usage.",
      response: "BetaManagedAgentsSession",
      errors: ["permission_denied", "not_found"],
      schema: { params: sessionParams },
      accepts: ["api_key", "work_token"],
    },
    async (req): Promise<BetaManagedAgentsSession> => viewSession(ctx, await sessions.require(req.tenant, req.params.session_id)),
  );

  router.add<{ Params: SessionParams; Body: SessionUpdateBody }>(
    {
      method: "POST",
      url: "/v1/sessions/:session_id",
      sdk: "beta.sessions.update",
      summary: "Update a session's title, metadata and budget, and while it is not running its agent's tools and MCP servers; a session.updated event records what changed.",
      response: "BetaManagedAgentsSession",
      errors: ["invalid_metadata", "not_found", "request_too_large", "budget_create_only", "budget_not_raised", "model_not_budgetable"],
      schema: { params: sessionParams, body: updateSessionBody },
    },
    (req) => updateSession(ctx, req.tenant, req.params.session_id, req.body, req.log),
  );

  router.add<{ Querystring: SessionListQuery }>(
    {
      method: "GET",
      url: "/v1/sessions",
      sdk: "beta.sessions.list",
      summary: "List sessions, newest first by default; next_page and prev_page move both ways.",
      response: "BidirectionalPageCursor<BetaManagedAgentsSession>",
      errors: [],
      schema: { querystring: listSessionsQuery },
    },
    async (req): Promise<BidirectionalPageCursorResponse<BetaManagedAgentsSession>> => {
      const q = req.query;
      if (q.deployment_id !== undefined || q.memory_store_id !== undefined) return { data: [], next_page: null, prev_page: null };
      const page = await sessions.list(req.tenant, {
        limit: pageLimit(q.limit, OBJECT_PAGE),
        cursor: decodeCursor("sessions", q.page, isTimeIdPosition),
        order: q.order ?? "desc",
        agentId: q.agent_id,
        // "Only applies when agent_id is also set" (SessionListParams): ignored alone, not refused.
        agentVersion: q.agent_id === undefined ? undefined : q.agent_version,
        created: TIME_OPS.flatMap(([op, sql]) => {
          const at = timeFilter(q, op);
          return at === undefined ? [] : [[sql, at] as const];
        }),
        includeArchived: q.include_archived === true,
      });
      const views = await Promise.all(page.rows.map((r) => viewSession(ctx, r)));
      const wanted = q.statuses === undefined || q.statuses.length === 0 ? undefined : new Set(q.statuses);
      return {
        // A status filter applies to the page as read, so a page may hold fewer than `limit`.
        data: wanted === undefined ? views : views.filter((v) => wanted.has(v.status)),
        next_page: page.next === undefined ? null : encodeCursor("sessions", page.next, "next"),
        prev_page: page.prev === undefined ? null : encodeCursor("sessions", page.prev, "prev"),
      };
    },
  );

  router.add<{ Params: SessionParams }>(
    {
      method: "POST",
      url: "/v1/sessions/:session_id/archive",
      sdk: "beta.sessions.archive",
      summary: "Archive a session: hidden from lists by default; it can no longer receive events.",
      response: "BetaManagedAgentsSession",
      errors: ["not_found"],
      schema: { params: sessionParams },
    },
    async (req): Promise<BetaManagedAgentsSession> => viewSession(ctx, await archiveSession(ctx.log, sessions, req.tenant, req.params.session_id, ctx.now())),
  );

  router.add<{ Params: SessionParams }>(
    {
      method: "DELETE",
      url: "/v1/sessions/:session_id",
      sdk: "beta.sessions.delete",
      summary: "Delete a session: it is terminated in the log and no longer served.",
      response: "BetaManagedAgentsDeletedSession",
      errors: ["not_found"],
      schema: { params: sessionParams },
    },
    async (req): Promise<BetaManagedAgentsDeletedSession> => {
      const record = await sessions.require(req.tenant, req.params.session_id);
      const live = await logSession(ctx, record.id);
      if (live.status !== SessionStatus.SESSION_STATUS_TERMINATED) {
        const events: Event[] = [];
        if (statusJson(live.status) === "running") events.push(newEvent("user.interrupt", {}));
        events.push(newEvent("session.status_terminated", {}));
        await ctx.log.emitEvents({ sessionId: record.id, events });
      }
      await ctx.work.stopForSession(record.id, ctx.now());
      // Its repositories' tokens go with it; a failure here fails the delete, which can be retried.
      await dropVault(ctx.credentials, record.tokens.vaultId);
      // A resource added meanwhile may have made the session's first vault: the row says which.
      const vaultId = await sessions.delete(req.tenant, record.id);
      if (vaultId !== record.tokens.vaultId) {
        await dropVault(ctx.credentials, vaultId).catch((err: unknown) =>
          req.log.error({ err, session_id: record.id, vault_id: vaultId }, "could not drop the vault of a deleted session"),
        );
      }
      req.log.info({ session_id: record.id }, "session deleted");
      return { id: record.id, type: "session_deleted" };
    },
  );
}
