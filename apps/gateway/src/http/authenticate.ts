/**
 * The gate in front of every /v1 route: the credential names who the request acts for (a tenant,
 * an environment's workers, or one work item's worker; see auth/principals.ts), the route says which
 * credentials it takes and the principal's scope must cover the objects the path names; and the
 * `anthropic-beta` header, when present, must ask for the Managed Agents version we serve. A
 * request without the header is served as that version unless MH_GATEWAY_REQUIRE_BETA_HEADER is
 * set: the gateway serves nothing else, so the header selects nothing here (docs/api.md).
 */
import type { FastifyRequest } from "fastify";
import { ApiError, invalidRequest, notFound } from "../errors/api-error.js";
import { headerValue } from "./headers.js";
import { CREDENTIAL_NAMES, type CredentialKind, type Principals, type Principal } from "../auth/principals.js";

export const MANAGED_AGENTS_BETA = "managed-agents-2026-04-01";
const BETA_FAMILY = "managed-agents-";

export interface AuthOptions {
  readonly principals: Principals;
  readonly requireBetaHeader: boolean;
}

/** The key from `x-api-key`, or from `Authorization: Bearer` (the SDK's authToken). */
function keyOf(req: FastifyRequest): string | undefined {
  const apiKey = headerValue(req, "x-api-key")?.trim();
  if (apiKey !== undefined && apiKey !== "") return apiKey;
  const match = /^Bearer\s+(\S+)$/i.exec(headerValue(req, "authorization") ?? "");
  return match?.[1];
}

export function checkBetaHeader(req: FastifyRequest, required: boolean): void {
  const raw = headerValue(req, "anthropic-beta");
  const betas = (raw ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
  const managed = betas.filter((b) => b.startsWith(BETA_FAMILY));
  if (managed.length === 0) {
    if (required) throw invalidRequest("anthropic-beta", `header must include ${MANAGED_AGENTS_BETA}`);
    return;
  }
  const unknown = managed.find((b) => b !== MANAGED_AGENTS_BETA);
  if (unknown !== undefined) {
    throw invalidRequest("anthropic-beta", `"${unknown}" is not served here; this gateway implements ${MANAGED_AGENTS_BETA}`);
  }
}

const API_KEY_ONLY: readonly CredentialKind[] = ["api_key"];

/**
 * The principal of the request, checked against what the route takes and the ids in its path:
 * 401 for a missing or unknown credential, 403 for one of the wrong kind (or a sessions token whose
 * work item moved on), 404 for an object outside the credential's scope.
 */
export async function authenticate(req: FastifyRequest, opts: AuthOptions, accepts: readonly CredentialKind[] = API_KEY_ONLY): Promise<Principal> {
  return admit(req, opts, accepts, await opts.principals.resolve(requireKey(req)));
}

/**
 * authenticate's answer when it needs no query (a key kept, refused, or missing: thrown as
 * authenticate throws), else undefined: a request then costs no promise and no microtask hop
 * before its handler (issue 31). A sessions token is always looked up.
 */
export function authenticateKept(req: FastifyRequest, opts: AuthOptions, accepts: readonly CredentialKind[] = API_KEY_ONLY): Principal | undefined {
  const known = opts.principals.kept(requireKey(req));
  return known === undefined ? undefined : admit(req, opts, accepts, known.principal);
}

function requireKey(req: FastifyRequest): string {
  const key = keyOf(req);
  if (key === undefined) throw new ApiError("authentication_failed", "x-api-key header is required");
  return key;
}

function admit(req: FastifyRequest, opts: AuthOptions, accepts: readonly CredentialKind[], principal: Principal | undefined): Principal {
  if (principal === undefined) throw new ApiError("authentication_failed", "invalid x-api-key");
  checkBetaHeader(req, opts.requireBetaHeader);
  if (!accepts.includes(principal.kind)) {
    throw new ApiError(
      "permission_denied",
      `this endpoint takes ${accepts.map((k) => CREDENTIAL_NAMES[k]).join(" or ")}, not ${CREDENTIAL_NAMES[principal.kind]}`,
    );
  }
  checkScope(principal, (req.params ?? {}) as Record<string, string | undefined>);
  return principal;
}

function checkScope(principal: Principal, params: Record<string, string | undefined>): void {
  if (principal.kind === "api_key") return;
  const { environment_id: environmentId, work_id: workId, session_id: sessionId } = params;
  if (environmentId !== undefined && environmentId !== principal.environmentId) throw notFound("environment", environmentId);
  if (principal.kind !== "work_token") return;
  if (workId !== undefined && workId !== principal.workId) throw notFound("work item", workId);
  if (sessionId !== undefined) {
    if (sessionId !== principal.sessionId) throw notFound("session", sessionId);
    if (!principal.current) throw revokedToken(principal.workId);
  }
}

/** A sessions token whose item has moved on: it no longer acts for the session. */
export function revokedToken(workId: string): ApiError {
  return new ApiError("permission_denied", `work item ${workId} has passed to another worker, stopped or outlived its lease; its sessions token no longer acts for the session`);
}
