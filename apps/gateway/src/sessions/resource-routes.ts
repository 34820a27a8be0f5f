/**
 * /v1/sessions/{id}/resources: list, retrieve, add, update (rotate a repository's token) and
 * delete a session's resources. Each change is made in order on the three sides that hold a part
 * of it: the token in the credential vault proxy, the repository in the session log (what
 * sandboxes clone; it checks mount paths and counts under its row lock, so concurrent adds cannot
 * both take one path), the resource in the gateway's record (one statement each, no lock held
 * across calls). Every step is idempotent or undone on failure, so a retried request converges.
 *
 * Sandboxes clone a session's repositories when they are provisioned: one already running keeps
 * what it cloned (an added repository reaches the session's next sandbox; a deleted one stays in
 * the files of the running sandbox, but without its token). A rotated token is used from the next
 * git command on, in running sandboxes too: the proxy reads the credential on every request.
 */
import type { PageCursorResponse } from "@anthropic-ai/sdk/core/pagination";
import type { BetaManagedAgentsDeleteSessionResource } from "@anthropic-ai/sdk/resources/beta/sessions/resources";
import { MhError } from "@metaharness/errors";
import { ApiError, invalidRequest, notFound } from "../errors/api-error.js";
import { decodeCursor, encodeCursor, isTimeIdPosition, OBJECT_PAGE, pageLimit, type TimeIdPosition } from "../http/pagination.js";
import { checkToken, resolveResource, type ResourceParams, type SessionResource } from "./resources.js";
import { listResourcesQuery, MAX_RESOURCES, resourceBody, resourceParams, sessionParams, updateResourceBody } from "./schemas.js";
import { dropToken, dropVault, putToken, tokenOf } from "./repository-tokens.js";
import type { StoredToken } from "./resource-store.js";
import type { CredentialProxyRpc, SessionLogRpc } from "../clients.js";
import type { Router } from "../http/router.js";
import type { SessionRecord, SessionStore } from "./store.js";

interface SessionParams {
  session_id: string;
}
interface ResourceParamsPath extends SessionParams {
  resource_id: string;
}

function find(record: SessionRecord, resourceId: string): SessionResource {
  const found = record.resources.find((r) => r.id === resourceId);
  if (found === undefined) throw notFound("session resource", resourceId);
  return found;
}

const position = (r: SessionResource): TimeIdPosition => [r.created_at, r.id];
const compare = (a: TimeIdPosition, b: TimeIdPosition): number => (a[0] === b[0] ? a[1].localeCompare(b[1]) : Date.parse(a[0]) - Date.parse(b[0]));

export interface ResourceRouteDeps {
  readonly sessions: SessionStore;
  readonly log: SessionLogRpc;
  /** Undefined when this deployment runs without a credential vault proxy. */
  readonly credentials: CredentialProxyRpc | undefined;
  now(): Date;
}

export function registerResourceRoutes(router: Router, ctx: ResourceRouteDeps): void {
  const { sessions } = ctx;

  router.add<{ Params: SessionParams; Querystring: { limit?: number; page?: string } }>(
    {
      method: "GET",
      url: "/v1/sessions/:session_id/resources",
      sdk: "beta.sessions.resources.list",
      summary: "List a session's resources, oldest first.",
      response: "PageCursor<BetaManagedAgentsSessionResource>",
      errors: ["not_found"],
      schema: { params: sessionParams, querystring: listResourcesQuery },
    },
    async (req): Promise<PageCursorResponse<SessionResource>> => {
      const record = await sessions.require(req.tenant, req.params.session_id);
      const limit = pageLimit(req.query.limit, OBJECT_PAGE);
      const cursor = decodeCursor("resources", req.query.page, isTimeIdPosition);
      const sorted = [...record.resources].sort((a, b) => compare(position(a), position(b)));
      const rest = cursor === undefined ? sorted : sorted.filter((r) => compare(position(r), cursor.position) > 0);
      const data = rest.slice(0, limit);
      const last = data[data.length - 1];
      return { data, next_page: rest.length > limit && last !== undefined ? encodeCursor("resources", position(last)) : null };
    },
  );

  router.add<{ Params: ResourceParamsPath }>(
    {
      method: "GET",
      url: "/v1/sessions/:session_id/resources/:resource_id",
      sdk: "beta.sessions.resources.retrieve",
      summary: "Retrieve a session resource (never its token).",
      response: "BetaManagedAgentsSessionResource",
      errors: ["not_found"],
      schema: { params: resourceParams },
    },
    async (req): Promise<SessionResource> => find(await sessions.require(req.tenant, req.params.session_id), req.params.resource_id),
  );

  router.add<{ Params: SessionParams; Body: ResourceParams }>(
    {
      method: "POST",
      url: "/v1/sessions/:session_id/resources",
      sdk: "beta.sessions.resources.add",
      summary: "Add a github_repository resource to a session: its next sandbox clones it.",
      response: "BetaManagedAgentsSessionResource",
      errors: ["not_found", "credential_vault_unconfigured", "request_too_large"],
      schema: { params: sessionParams, body: resourceBody },
    },
    async (req): Promise<SessionResource> => {
      const now = ctx.now();
      const current = await sessions.require(req.tenant, req.params.session_id);
      const sessionId = current.id;
      if (current.resources.length >= MAX_RESOURCES) throw invalidRequest("session_id", `the session has ${MAX_RESOURCES} resources, the most it can have`);
      const taken = new Set(current.resources.map((r) => r.mount_path));
      const { resource, repository, token } = resolveResource(req.body, "", now, taken, { proxied: ctx.credentials !== undefined, selfHosted: current.environmentType === "self_hosted" });
      const target = { tenant: req.tenant, sessionId, resourceId: resource.id, url: resource.url };
      const stored = token === undefined || ctx.credentials === undefined ? undefined : await putToken(ctx.credentials, current.tokens.vaultId, undefined, target, token);
      let logged = false;
      try {
        await ctx.log.updateSession({ sessionId, putRepositories: [repository], removeRepositories: [], agent: undefined }).catch((err: unknown) => {
          throw fromLogRefusal(err, resource);
        });
        logged = true;
        await sessions.resources.add(req.tenant, sessionId, resource, stored, now);
      } catch (err) {
        // Undo what was done, so nothing half-added stays behind.
        if (logged) await ctx.log.updateSession({ sessionId, putRepositories: [], removeRepositories: [resource.id], agent: undefined }).catch(() => undefined);
        await undoToken(ctx, req.tenant, current, stored).catch((e: unknown) => req.log.warn({ err: e }, "could not drop the token of a resource not added"));
        throw err;
      }
      req.log.info({ session_id: sessionId, resource_id: resource.id, with_token: stored !== undefined }, "session resource added");
      return resource;
    },
  );

  router.add<{ Params: ResourceParamsPath; Body: { authorization_token: string } }>(
    {
      method: "POST",
      url: "/v1/sessions/:session_id/resources/:resource_id",
      sdk: "beta.sessions.resources.update",
      summary: "Rotate a github_repository resource's token: git uses the new one from its next command on.",
      response: "BetaManagedAgentsSessionResource",
      errors: ["not_found", "credential_vault_unconfigured", "request_too_large"],
      schema: { params: resourceParams, body: updateResourceBody },
    },
    async (req): Promise<SessionResource> => {
      const now = ctx.now();
      const { session_id: sessionId, resource_id: resourceId } = req.params;
      const current = await sessions.require(req.tenant, sessionId);
      const resource = find(current, resourceId);
      const token = checkToken(req.body.authorization_token, "authorization_token") ?? "";
      if (ctx.credentials === undefined) throw new ApiError("credential_vault_unconfigured", "authorization_token: tokens are held by the credential vault proxy, which this deployment runs the gateway without");
      const target = { tenant: req.tenant, sessionId, resourceId, url: resource.url };
      const stored = await putToken(ctx.credentials, current.tokens.vaultId, tokenOf(current.tokens, resourceId), target, token);
      try {
        await sessions.resources.setToken(req.tenant, sessionId, resourceId, stored, now);
      } catch (err) {
        // Deleted meanwhile: its token goes too.
        await dropToken(ctx.credentials, stored).catch(() => undefined);
        throw err;
      }
      req.log.info({ session_id: sessionId, resource_id: resourceId }, "session resource token rotated");
      return { ...resource, updated_at: now.toISOString() };
    },
  );

  router.add<{ Params: ResourceParamsPath }>(
    {
      method: "DELETE",
      url: "/v1/sessions/:session_id/resources/:resource_id",
      sdk: "beta.sessions.resources.delete",
      summary: "Remove a resource from a session; its token is deleted from the credential vault proxy.",
      response: "BetaManagedAgentsDeleteSessionResource",
      errors: ["not_found"],
      schema: { params: resourceParams },
    },
    async (req): Promise<BetaManagedAgentsDeleteSessionResource> => {
      const { session_id: sessionId, resource_id: resourceId } = req.params;
      const current = await sessions.require(req.tenant, sessionId);
      find(current, resourceId);
      try {
        await ctx.log.updateSession({ sessionId, putRepositories: [], removeRepositories: [resourceId], agent: undefined });
      } catch (err) {
        // A terminated session provisions no more sandboxes: its token still goes.
        if (MhError.from(err).code !== "FAILED_PRECONDITION") throw err;
      }
      await dropToken(ctx.credentials, tokenOf(current.tokens, resourceId));
      await sessions.resources.remove(req.tenant, sessionId, resourceId, ctx.now());
      req.log.info({ session_id: sessionId, resource_id: resourceId }, "session resource deleted");
      return { id: resourceId, type: "session_resource_deleted" };
    },
  );
}

/**
 * Drops the token of a resource that was not added, and the session's own vault too when this
 * add made it (the session had none) and the session's record has not taken it meanwhile (another
 * add that got the same vault and succeeded): no empty vault outlives a refused add.
 */
async function undoToken(ctx: ResourceRouteDeps, tenant: string, before: SessionRecord, stored: StoredToken | undefined): Promise<void> {
  await dropToken(ctx.credentials, stored);
  if (stored === undefined || before.tokens.vaultId !== null) return;
  const now = await ctx.sessions.get(tenant, before.id);
  if (now?.tokens.vaultId !== stored.vaultId) await dropVault(ctx.credentials, stored.vaultId);
}

/** The log's refusal of a repository, in the API's words (it checks mount paths and counts under its lock). */
function fromLogRefusal(err: unknown, resource: SessionResource): unknown {
  const e = MhError.from(err);
  if (e.code !== "INVALID_ARGUMENT") return err;
  if (e.field?.endsWith(".mount_path") === true) return invalidRequest("mount_path", `"${resource.mount_path}" is already the mount path of another resource of this session`);
  return invalidRequest("session_id", e.message);
}
