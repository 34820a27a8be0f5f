/**
 * /v1/environments: create, retrieve, update, list, archive, delete. A session snapshots its
 * environment's config into the session log's metadata; the harness provisions from it.
 */
import type { PageCursorResponse } from "@anthropic-ai/sdk/core/pagination";
import type { BetaEnvironment, BetaEnvironmentDeleteResponse } from "@anthropic-ai/sdk/resources/beta/environments/environments";
import { decodeCursor, encodeCursor, isTimeIdPosition, OBJECT_PAGE, pageLimit } from "../http/pagination.js";
import { ENVIRONMENT_ID_PREFIX, newId } from "../ids.js";
import {
  applyEnvironmentUpdate,
  environmentBodyFromCreate,
  renderEnvironment,
  type EnvironmentCreateBody,
  type EnvironmentRecord,
  type EnvironmentUpdateBody,
} from "./body.js";
import { createEnvironmentBody, environmentParams, listEnvironmentsQuery, updateEnvironmentBody } from "./schemas.js";
import type { Router } from "../http/router.js";
import type { PackageLayers } from "./package-layers.js";
import { HAND_KEY, type HandKindCheck } from "./hand.js";
import type { EnvironmentStore } from "./store.js";

interface EnvironmentParams {
  environment_id: string;
}

export interface EnvironmentRouteDeps {
  readonly environments: EnvironmentStore;
  /** Environments' package layers, built by the sandbox broker. */
  readonly layers: PackageLayers;
  /** Checks an environment's hand kind (metadata mh.hand) against the broker's connected hands. */
  readonly hands: HandKindCheck;
  now(): Date;
}

export function registerEnvironmentRoutes(router: Router, ctx: EnvironmentRouteDeps): void {
  const { environments } = ctx;
  /** The environment with its packages' layer state in metadata (package-layers.ts STATUS_KEYS). */
  const render = async (record: EnvironmentRecord): Promise<BetaEnvironment> => {
    const env = renderEnvironment(record);
    return { ...env, metadata: { ...env.metadata, ...(await ctx.layers.status(record.body.config)) } };
  };

  router.add<{ Body: EnvironmentCreateBody }>(
    {
      method: "POST",
      url: "/v1/environments",
      sdk: "beta.environments.create",
      summary: "Create an environment (cloud by default, limited networking without hosts: no network).",
      response: "BetaEnvironment",
      errors: ["invalid_metadata", "request_too_large"],
      schema: { body: createEnvironmentBody },
    },
    async (req): Promise<BetaEnvironment> => {
      const body = environmentBodyFromCreate(req.body);
      await ctx.hands.check(body.config, body.metadata);
      // The broker refuses lists it cannot build before anything is stored; the build goes on.
      await ctx.layers.build(body.config);
      return render(await environments.create(req.tenant, newId(ENVIRONMENT_ID_PREFIX), body, ctx.now()));
    },
  );

  router.add<{ Params: EnvironmentParams }>(
    {
      method: "GET",
      url: "/v1/environments/:environment_id",
      sdk: "beta.environments.retrieve",
      summary: "Retrieve an environment.",
      response: "BetaEnvironment",
      errors: ["not_found"],
      schema: { params: environmentParams },
    },
    async (req): Promise<BetaEnvironment> => render(await environments.require(req.tenant, req.params.environment_id)),
  );

  router.add<{ Params: EnvironmentParams; Body: EnvironmentUpdateBody }>(
    {
      method: "POST",
      url: "/v1/environments/:environment_id",
      sdk: "beta.environments.update",
      summary: "Update an environment; omitted fields keep their value. Its config type cannot change.",
      response: "BetaEnvironment",
      errors: ["invalid_metadata", "environment_archived", "invalid_config_type_change", "not_found", "request_too_large"],
      schema: { params: environmentParams, body: updateEnvironmentBody },
    },
    async (req): Promise<BetaEnvironment> => {
      const newLists = req.body.config?.type === "cloud" && req.body.config.packages !== undefined && req.body.config.packages !== null;
      const newHand = typeof req.body.metadata?.[HAND_KEY] === "string" && req.body.metadata[HAND_KEY] !== "";
      if (newLists || newHand) {
        // New lists are built (a failed build tried again), and a hand named checked, before the update is stored.
        const current = await environments.require(req.tenant, req.params.environment_id);
        const next = applyEnvironmentUpdate(current.body, req.body);
        if (current.archivedAt === null && newLists) await ctx.layers.build(next.config);
        if (current.archivedAt === null && newHand) await ctx.hands.check(next.config, next.metadata);
      }
      const updated = await environments.update(req.tenant, req.params.environment_id, (b) => applyEnvironmentUpdate(b, req.body), ctx.now());
      return render(updated);
    },
  );

  router.add<{ Querystring: { limit?: number; page?: string; include_archived?: boolean } }>(
    {
      method: "GET",
      url: "/v1/environments",
      sdk: "beta.environments.list",
      summary: "List environments, newest first.",
      response: "PageCursor<BetaEnvironment>",
      errors: [],
      schema: { querystring: listEnvironmentsQuery },
    },
    async (req): Promise<PageCursorResponse<BetaEnvironment>> => {
      const page = await environments.list(req.tenant, {
        limit: pageLimit(req.query.limit, OBJECT_PAGE),
        cursor: decodeCursor("environments", req.query.page, isTimeIdPosition),
        includeArchived: req.query.include_archived === true,
      });
      return {
        data: await Promise.all(page.rows.map(render)),
        next_page: page.next === undefined ? null : encodeCursor("environments", page.next),
      };
    },
  );

  router.add<{ Params: EnvironmentParams }>(
    {
      method: "POST",
      url: "/v1/environments/:environment_id/archive",
      sdk: "beta.environments.archive",
      summary: "Archive an environment: new sessions cannot use it and it cannot be updated.",
      response: "BetaEnvironment",
      errors: ["not_found"],
      schema: { params: environmentParams },
    },
    async (req): Promise<BetaEnvironment> => render(await environments.archive(req.tenant, req.params.environment_id, ctx.now())),
  );

  router.add<{ Params: EnvironmentParams }>(
    {
      method: "DELETE",
      url: "/v1/environments/:environment_id",
      sdk: "beta.environments.delete",
      summary: "Delete an environment. Sessions created in it keep its id.",
      response: "BetaEnvironmentDeleteResponse",
      errors: ["not_found"],
      schema: { params: environmentParams },
    },
    async (req): Promise<BetaEnvironmentDeleteResponse> => {
      await environments.delete(req.tenant, req.params.environment_id);
      return { id: req.params.environment_id, type: "environment_deleted" };
    },
  );
}
