/**
 * Environment keys: the credential of a self-hosted environment's workers (EnvironmentWorker's
 * `environmentKey`). The Managed Agents API has no call that issues one (Anthropic's Console
 * does), so the gateway issues them on a route of its own; the key is shown once, only its sha256
 * is stored, and an environment may hold several (to rotate without downtime) until revoked.
 */
import { randomBytes } from "node:crypto";
import type { Db } from "@metaharness/db";
import { hashKey } from "../auth/api-keys.js";
import { ENVIRONMENT_KEY_PREFIX } from "../auth/key-prefixes.js";
import { notFound } from "../errors/api-error.js";
import { newId } from "../ids.js";

export const ENVIRONMENT_KEY_ID_PREFIX = "envkey_";

export interface IssuedKey {
  readonly id: string;
  readonly key: string;
  readonly createdAt: Date;
}

export class EnvironmentKeyStore {
  constructor(private readonly db: Db) {}

  async issue(tenant: string, environmentId: string, now: Date): Promise<IssuedKey> {
    const id = newId(ENVIRONMENT_KEY_ID_PREFIX);
    const key = ENVIRONMENT_KEY_PREFIX + randomBytes(32).toString("base64url");
    await this.db.query(
      "INSERT INTO gw_environment_keys (key_id, key_hash, environment_id, tenant, created_at) VALUES ($1, $2, $3, $4, $5)",
      [id, hashKey(key), environmentId, tenant, now],
    );
    return { id, key, createdAt: now };
  }

  /** Revokes a key of the environment; workers holding it are refused within the key cache's TTL. */
  async revoke(tenant: string, environmentId: string, keyId: string, now: Date): Promise<void> {
    const { rowCount } = await this.db.query(
      "UPDATE gw_environment_keys SET revoked_at = COALESCE(revoked_at, $4) WHERE key_id = $1 AND environment_id = $2 AND tenant = $3",
      [keyId, environmentId, tenant, now],
    );
    if (rowCount === 0) throw notFound("environment key", keyId);
  }
}
