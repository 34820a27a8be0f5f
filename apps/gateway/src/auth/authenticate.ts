/**
 * The gate in front of every /v1 route: the API key names the tenant the request acts for, and
 * the `anthropic-beta` header, when present, must ask for the Managed Agents version we serve.
 * A request without the header is served as that version unless MH_GATEWAY_REQUIRE_BETA_HEADER
 * is set: the gateway serves nothing else, so the header selects nothing here (docs/api.md).
 */
import type { FastifyRequest } from "fastify";
import { ApiError, invalidRequest } from "../errors/api-error.js";
import type { ApiKeys } from "./api-keys.js";

export const MANAGED_AGENTS_BETA = "managed-agents-2026-04-01";
const BETA_FAMILY = "managed-agents-";

export interface AuthOptions {
  readonly keys: ApiKeys;
  readonly requireBetaHeader: boolean;
}

function header(req: FastifyRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The key from `x-api-key`, or from `Authorization: Bearer` (the SDK's authToken). */
function keyOf(req: FastifyRequest): string | undefined {
  const apiKey = header(req, "x-api-key")?.trim();
  if (apiKey !== undefined && apiKey !== "") return apiKey;
  const match = /^Bearer\s+(\S+)$/i.exec(header(req, "authorization") ?? "");
  return match?.[1];
}

export function checkBetaHeader(req: FastifyRequest, required: boolean): void {
  const raw = header(req, "anthropic-beta");
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

/** Resolves the tenant of the request or throws the 401 the SDK expects. */
export async function authenticate(req: FastifyRequest, opts: AuthOptions): Promise<string> {
  const key = keyOf(req);
  if (key === undefined) {
    throw new ApiError("authentication_failed", "x-api-key header is required");
  }
  const tenant = await opts.keys.tenantOf(key);
  if (tenant === undefined) throw new ApiError("authentication_failed", "invalid x-api-key");
  checkBetaHeader(req, opts.requireBetaHeader);
  return tenant;
}
