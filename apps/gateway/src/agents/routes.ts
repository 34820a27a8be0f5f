/**
 * /v1/agents: create, retrieve (optionally a past version), update with optimistic concurrency
 * on `version`, list newest first, archive, and the list of an agent's versions.
 */
import type { BetaManagedAgentsAgent } from "@anthropic-ai/sdk/resources/beta/agents/agents";
import type { PageCursorResponse } from "@anthropic-ai/sdk/core/pagination";
import { decodeCursor, encodeCursor, isSeqPosition, isTimeIdPosition, OBJECT_PAGE, pageLimit } from "../http/pagination.js";
import { AGENT_ID_PREFIX, newId } from "../ids.js";
import { agentBodyFromCreate, applyAgentUpdate, renderAgent, type AgentCreateBody, type AgentUpdateBody } from "./body.js";
import { agentParams, createAgentBody, listAgentsQuery, listVersionsQuery, retrieveAgentQuery, updateAgentBody } from "./schemas.js";
import { timeFilter } from "../http/filters.js";
import type { Router } from "../http/router.js";
import type { AgentStore } from "./store.js";

type AgentPage = PageCursorResponse<BetaManagedAgentsAgent>;
interface AgentParams {
  agent_id: string;
}
type AgentListQuery = {
  limit?: number;
  page?: string;
  include_archived?: boolean;
  "created_at[gte]"?: string;
  "created_at[lte]"?: string;
};

export interface AgentRouteDeps {
  readonly agents: AgentStore;
  now(): Date;
}

export function registerAgentRoutes(router: Router, ctx: AgentRouteDeps): void {
  const { agents } = ctx;

  router.add<{ Body: AgentCreateBody }>(
    {
      method: "POST",
      url: "/v1/agents",
      sdk: "beta.agents.create",
      summary: "Create an agent (version 1).",
      response: "BetaManagedAgentsAgent",
      errors: ["invalid_metadata", "request_too_large"],
      schema: { body: createAgentBody },
    },
    async (req): Promise<BetaManagedAgentsAgent> => {
      const body = agentBodyFromCreate(req.body);
      return renderAgent(await agents.create(req.tenant, newId(AGENT_ID_PREFIX), body, ctx.now()));
    },
  );

  router.add<{ Params: AgentParams; Querystring: { version?: number } }>(
    {
      method: "GET",
      url: "/v1/agents/:agent_id",
      sdk: "beta.agents.retrieve",
      summary: "Retrieve an agent: its current version, or `?version=`.",
      response: "BetaManagedAgentsAgent",
      errors: ["not_found"],
      schema: { params: agentParams, querystring: retrieveAgentQuery },
    },
    async (req): Promise<BetaManagedAgentsAgent> => renderAgent(await agents.require(req.tenant, req.params.agent_id, req.query.version)),
  );

  router.add<{ Params: AgentParams; Body: AgentUpdateBody }>(
    {
      method: "POST",
      url: "/v1/agents/:agent_id",
      sdk: "beta.agents.update",
      summary: "Update an agent; a new version is made when something changed. `version` must match the current one (409 otherwise).",
      response: "BetaManagedAgentsAgent",
      errors: ["invalid_metadata", "not_found", "conflict", "request_too_large"],
      schema: { params: agentParams, body: updateAgentBody },
    },
    async (req): Promise<BetaManagedAgentsAgent> => {
      const { version, ...changes } = req.body;
      const updated = await agents.update(req.tenant, req.params.agent_id, version, (current) => applyAgentUpdate(current, changes), ctx.now());
      return renderAgent(updated);
    },
  );

  router.add<{ Querystring: AgentListQuery }>(
    {
      method: "GET",
      url: "/v1/agents",
      sdk: "beta.agents.list",
      summary: "List agents, newest first.",
      response: "PageCursor<BetaManagedAgentsAgent>",
      errors: [],
      schema: { querystring: listAgentsQuery },
    },
    async (req): Promise<AgentPage> => {
      const q = req.query;
      const cursor = decodeCursor("agents", q.page, isTimeIdPosition);
      const page = await agents.list(req.tenant, {
        limit: pageLimit(q.limit, OBJECT_PAGE),
        cursor,
        createdGte: timeFilter(q, "gte"),
        createdLte: timeFilter(q, "lte"),
        includeArchived: q.include_archived === true,
      });
      return { data: page.rows.map(renderAgent), next_page: page.next === undefined ? null : encodeCursor("agents", page.next) };
    },
  );

  router.add<{ Params: AgentParams }>(
    {
      method: "POST",
      url: "/v1/agents/:agent_id/archive",
      sdk: "beta.agents.archive",
      summary: "Archive an agent: it is no longer listed by default, cannot be updated, and new sessions cannot use it.",
      response: "BetaManagedAgentsAgent",
      errors: ["not_found"],
      schema: { params: agentParams },
    },
    async (req): Promise<BetaManagedAgentsAgent> => renderAgent(await agents.archive(req.tenant, req.params.agent_id, ctx.now())),
  );

  router.add<{ Params: AgentParams; Querystring: { limit?: number; page?: string } }>(
    {
      method: "GET",
      url: "/v1/agents/:agent_id/versions",
      sdk: "beta.agents.versions.list",
      summary: "List an agent's versions, newest first.",
      response: "PageCursor<BetaManagedAgentsAgent>",
      errors: ["not_found"],
      schema: { params: agentParams, querystring: listVersionsQuery },
    },
    async (req): Promise<AgentPage> => {
      const cursor = decodeCursor("agent-versions", req.query.page, isSeqPosition);
      const page = await agents.versions(req.tenant, req.params.agent_id, pageLimit(req.query.limit, OBJECT_PAGE), cursor?.position);
      return {
        data: page.rows.map(renderAgent),
        next_page: page.next === undefined ? null : encodeCursor("agent-versions", page.next),
      };
    },
  );
}
