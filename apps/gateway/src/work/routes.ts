/**
 * /v1/environments/{id}/work: the work queue of a self-hosted environment, the protocol of the
 * SDK's EnvironmentWorker. Workers hold the environment key: they poll (a long poll of up to
 * 999 ms) and acknowledge items, then act for one item with the sessions token of its `secret`:
 * heartbeat its lease, stream its session's events and send the tool results, and stop it when
 * done. The tenant's API key retrieves, updates and stops items and reads the queue's stats.
 */
import type { PageCursorResponse } from "@anthropic-ai/sdk/core/pagination";
import type {
  BetaSelfHostedWork,
  BetaSelfHostedWorkHeartbeatResponse,
  BetaSelfHostedWorkQueueStats,
} from "@anthropic-ai/sdk/resources/beta/environments/work";
import type { Db } from "@metaharness/db";
import type { FastifyBaseLogger, FastifyRequest } from "fastify";
import type { EnvironmentStore } from "../environments/store.js";
import { headerValue } from "../http/headers.js";
import { decodeCursor, encodeCursor, isTimeIdPosition, OBJECT_PAGE, pageLimit } from "../http/pagination.js";
import { patchMetadata, type MetadataPatch } from "../http/metadata.js";
import { environmentParams } from "../environments/schemas.js";
import { heartbeatQuery, listWorkQuery, pollQuery, stopBody, updateWorkBody, workParams } from "./schemas.js";
import { needsHands, requestHands, type HandsDeps, type HandsSession } from "./hands.js";
import { heartbeat, MAX_LEASE_TTL_SECONDS, stop } from "./lease.js";
import { DEFAULT_RECLAIM_MS } from "./queue.js";
import { renderWork, workSecret, type WorkRecord } from "./record.js";
import type { Router } from "../http/router.js";

/** What the work routes use beyond hands.ts's: leases in the database, environments, sessions' records. */
export interface WorkRouteDeps extends HandsDeps {
  /** The gateway's database, for work item leases (lease.ts). */
  readonly db: Db;
  readonly environments: EnvironmentStore;
  /** The sessions' records (sessions/store.ts), read to ask for hands again. */
  readonly sessions: { get(tenant: string, id: string): Promise<HandsSession | undefined> };
  /** The lease a heartbeat extends unless it asks for another (MH_GATEWAY_WORK_LEASE_TTL_SECONDS). */
  readonly workLeaseTtlSeconds: number;
}

interface WorkParams {
  environment_id: string;
  work_id: string;
}

const WORKER = ["environment_key"] as const;
const WORKER_OR_ITEM = ["environment_key", "work_token"] as const;

/** Anthropic-Worker-ID, as stored: its first 256 characters. */
function workerId(req: FastifyRequest): string | undefined {
  const value = headerValue(req, "anthropic-worker-id")?.trim().slice(0, 256);
  return value === undefined || value === "" ? undefined : value;
}

/** An API key reaches the tenant's environments only; workers' credentials are scoped already. */
async function checkEnvironment(ctx: Pick<WorkRouteDeps, "environments">, req: FastifyRequest<{ Params: { environment_id: string } }>): Promise<void> {
  if (req.principal?.kind !== "api_key") return;
  await ctx.environments.requireSelfHosted(req.tenant, req.params.environment_id, "it has no work queue");
}

/**
 * A worker stopped its item while the session still needs hands: queue it again for the next
 * worker. Not when the tenant had asked the item to wind down (it was `stopping`): the worker's
 * stop then ends that wind-down, and a stop by the API key queues nothing new.
 */
async function requeueIfNeeded(ctx: WorkRouteDeps, tenant: string, work: WorkRecord, logger: FastifyBaseLogger): Promise<void> {
  try {
    const session = await ctx.sessions.get(tenant, work.sessionId);
    if (session !== undefined && (await needsHands(ctx, work.sessionId))) await requestHands(ctx, tenant, session, "still needed", logger);
  } catch (err) {
    logger.warn({ err, work_id: work.id, session_id: work.sessionId }, "could not check whether the session still needs hands");
  }
}

export function registerWorkRoutes(router: Router, ctx: WorkRouteDeps): void {
  const base = "/v1/environments/:environment_id/work";

  router.add<{ Params: { environment_id: string }; Querystring: { block_ms?: number | null; reclaim_older_than_ms?: number | null } }>(
    {
      method: "GET",
      url: `${base}/poll`,
      sdk: "beta.environments.work.poll",
      summary: "Claim the oldest available work item (long poll up to block_ms); null when there is none. Carries the item's secret.",
      response: "BetaSelfHostedWork | null",
      errors: ["permission_denied", "not_found"],
      schema: { params: environmentParams, querystring: pollQuery },
      accepts: WORKER,
    },
    async (req, reply) => {
      const env = req.params.environment_id;
      const claim = () => ctx.work.claim(env, workerId(req), req.query.reclaim_older_than_ms ?? DEFAULT_RECLAIM_MS, ctx.now());
      let claimed = await claim();
      if (claimed === undefined && req.query.block_ms !== undefined && req.query.block_ms !== null) {
        await ctx.workSignals.wait(env, req.query.block_ms);
        claimed = await claim();
      }
      if (claimed === undefined) return reply.type("application/json").send("null");
      const { work, token } = claimed;
      req.log.info({ work_id: work.id, session_id: work.sessionId, delivery: work.delivery, worker_id: work.workerId }, "work delivered");
      return renderWork(work, workSecret(token));
    },
  );

  router.add<{ Params: WorkParams }>(
    {
      method: "POST",
      url: `${base}/:work_id/ack`,
      sdk: "beta.environments.work.ack",
      summary: "Acknowledge a delivered item: queued to starting, its lease begins.",
      response: "BetaSelfHostedWork",
      errors: ["permission_denied", "not_found", "conflict"],
      schema: { params: workParams },
      accepts: WORKER,
    },
    async (req): Promise<BetaSelfHostedWork> =>
      renderWork(await ctx.work.ack(req.params.environment_id, req.params.work_id, workerId(req), ctx.now(), ctx.workLeaseTtlSeconds)),
  );

  router.add<{ Params: WorkParams; Querystring: { desired_ttl_seconds?: number | null; expected_last_heartbeat?: string | null } }>(
    {
      method: "POST",
      url: `${base}/:work_id/heartbeat`,
      sdk: "beta.environments.work.heartbeat",
      summary: "Extend the item's lease; 412 heartbeat_precondition_failed when the lease is no longer the caller's.",
      response: "BetaSelfHostedWorkHeartbeatResponse",
      errors: ["permission_denied", "not_found", "conflict", "heartbeat_precondition_failed"],
      schema: { params: workParams, querystring: heartbeatQuery },
      accepts: WORKER_OR_ITEM,
    },
    async (req): Promise<BetaSelfHostedWorkHeartbeatResponse> => {
      const p = req.principal;
      const desired = req.query.desired_ttl_seconds ?? ctx.workLeaseTtlSeconds;
      return heartbeat(
        ctx.db,
        {
          environmentId: req.params.environment_id,
          workId: req.params.work_id,
          delivery: p?.kind === "work_token" ? p.delivery : undefined,
          // The SDK sends null as an empty value (`expected_last_heartbeat=`): no check, as absent.
          expected: req.query.expected_last_heartbeat === "" ? undefined : (req.query.expected_last_heartbeat ?? undefined),
          ttlSeconds: Math.min(desired, MAX_LEASE_TTL_SECONDS),
        },
        ctx.now(),
      );
    },
  );

  router.add<{ Params: WorkParams; Body: { force?: boolean | null } | undefined }>(
    {
      method: "POST",
      url: `${base}/:work_id/stop`,
      sdk: "beta.environments.work.stop",
      summary: "Stop an item: at once with force (or when not yet running), else its worker is asked to wind down (stopping).",
      response: "BetaSelfHostedWork",
      errors: ["permission_denied", "not_found", "conflict"],
      schema: { params: workParams, body: stopBody },
      accepts: ["api_key", ...WORKER_OR_ITEM],
    },
    async (req): Promise<BetaSelfHostedWork> => {
      await checkEnvironment(ctx, req);
      const p = req.principal;
      const { work: stopped, wasStopping } = await stop(
        ctx.db,
        {
          environmentId: req.params.environment_id,
          workId: req.params.work_id,
          delivery: p?.kind === "work_token" ? p.delivery : undefined,
          force: req.body?.force === true,
        },
        ctx.now(),
      );
      req.log.info({ work_id: stopped.id, session_id: stopped.sessionId, state: stopped.state, by: p?.kind }, "work stopped");
      if (p?.kind !== "api_key" && stopped.state === "stopped" && !wasStopping) await requeueIfNeeded(ctx, req.tenant, stopped, req.log);
      return renderWork(stopped);
    },
  );

  router.add<{ Params: WorkParams }>(
    {
      method: "GET",
      url: `${base}/:work_id`,
      sdk: "beta.environments.work.retrieve",
      summary: "Retrieve a work item (without its secret).",
      response: "BetaSelfHostedWork",
      errors: ["permission_denied", "not_found"],
      schema: { params: workParams },
    },
    async (req): Promise<BetaSelfHostedWork> => {
      await checkEnvironment(ctx, req);
      return renderWork(await ctx.work.get(req.params.environment_id, req.params.work_id));
    },
  );

  router.add<{ Params: WorkParams; Body: { metadata: MetadataPatch } }>(
    {
      method: "POST",
      url: `${base}/:work_id`,
      sdk: "beta.environments.work.update",
      summary: "Patch a work item's metadata: a string upserts a key, null deletes it.",
      response: "BetaSelfHostedWork",
      errors: ["permission_denied", "invalid_metadata", "not_found"],
      schema: { params: workParams, body: updateWorkBody },
    },
    async (req): Promise<BetaSelfHostedWork> => {
      await checkEnvironment(ctx, req);
      return renderWork(await ctx.work.updateMetadata(req.params.environment_id, req.params.work_id, (m) => patchMetadata(m, req.body.metadata)));
    },
  );

  router.add<{ Params: { environment_id: string }; Querystring: { limit?: number; page?: string } }>(
    {
      method: "GET",
      url: base,
      sdk: "beta.environments.work.list",
      summary: "List the environment's work items, newest first.",
      response: "PageCursor<BetaSelfHostedWork>",
      errors: ["permission_denied", "not_found"],
      schema: { params: environmentParams, querystring: listWorkQuery },
      accepts: WORKER,
    },
    async (req): Promise<PageCursorResponse<BetaSelfHostedWork>> => {
      const page = await ctx.work.list(req.params.environment_id, {
        limit: pageLimit(req.query.limit, OBJECT_PAGE),
        cursor: decodeCursor("work", req.query.page, isTimeIdPosition),
      });
      return { data: page.rows.map((w) => renderWork(w)), next_page: page.next === undefined ? null : encodeCursor("work", page.next) };
    },
  );

  router.add<{ Params: { environment_id: string } }>(
    {
      method: "GET",
      url: `${base}/stats`,
      sdk: "beta.environments.work.stats",
      summary: "The queue's depth, items delivered but not acknowledged, its oldest item, and the workers polling it.",
      response: "BetaSelfHostedWorkQueueStats",
      errors: ["permission_denied", "not_found"],
      schema: { params: environmentParams },
      accepts: ["api_key", "environment_key"],
    },
    async (req): Promise<BetaSelfHostedWorkQueueStats> => {
      await checkEnvironment(ctx, req);
      const s = await ctx.work.stats(req.params.environment_id, ctx.now());
      return {
        type: "work_queue_stats",
        depth: s.depth,
        pending: s.pending,
        oldest_queued_at: s.oldestQueuedAt?.toISOString() ?? null,
        workers_polling: s.workersPolling,
      };
    },
  );
}
