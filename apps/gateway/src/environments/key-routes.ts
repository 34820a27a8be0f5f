/**
 * Environment keys, the credential of a self-hosted environment's workers. Anthropic's API has no
 * call that issues them (its Console does), so these two routes are the gateway's own, under the
 * tenant's API key; with the SDK they are `client.post(...)` and `client.delete(...)`.
 */
import type { Router } from "../http/router.js";
import type { EnvironmentKeyStore } from "./key-store.js";
import { environmentParams, keyParams } from "./schemas.js";
import type { EnvironmentStore } from "./store.js";

export interface EnvironmentKeyJson {
  readonly type: "environment_key";
  readonly id: string;
  readonly environment_id: string;
  /** Shown once; only its sha256 is kept. */
  readonly key: string;
  readonly created_at: string;
}

export interface EnvironmentKeyRouteDeps {
  readonly environments: EnvironmentStore;
  readonly environmentKeys: EnvironmentKeyStore;
  now(): Date;
}

export function registerEnvironmentKeyRoutes(router: Router, ctx: EnvironmentKeyRouteDeps): void {
  router.add<{ Params: { environment_id: string } }>(
    {
      method: "POST",
      url: "/v1/environments/:environment_id/keys",
      sdk: "beta.environments.keys.create",
      summary: "Issue an environment key for a self_hosted environment's workers (shown once). Meta-Harness's own route.",
      response: "EnvironmentKey",
      errors: ["not_found"],
      schema: { params: environmentParams },
      extension: true,
    },
    async (req): Promise<EnvironmentKeyJson> => {
      const env = await ctx.environments.requireSelfHosted(req.tenant, req.params.environment_id, "only its workers hold an environment key");
      const issued = await ctx.environmentKeys.issue(req.tenant, env.id, ctx.now());
      req.log.info({ environment_id: env.id, key_id: issued.id }, "environment key issued");
      return { type: "environment_key", id: issued.id, environment_id: env.id, key: issued.key, created_at: issued.createdAt.toISOString() };
    },
  );

  router.add<{ Params: { environment_id: string; key_id: string } }>(
    {
      method: "DELETE",
      url: "/v1/environments/:environment_id/keys/:key_id",
      sdk: "beta.environments.keys.delete",
      summary: "Revoke an environment key; workers holding it are refused within MH_GATEWAY_KEY_CACHE_MS. Meta-Harness's own route.",
      response: "{ id, type: 'environment_key_deleted' }",
      errors: ["not_found"],
      schema: { params: keyParams },
      extension: true,
    },
    async (req): Promise<{ id: string; type: "environment_key_deleted" }> => {
      await ctx.environmentKeys.revoke(req.tenant, req.params.environment_id, req.params.key_id, ctx.now());
      req.log.info({ environment_id: req.params.environment_id, key_id: req.params.key_id }, "environment key revoked");
      return { id: req.params.key_id, type: "environment_key_deleted" };
    },
  );
}
