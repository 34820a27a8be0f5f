/**
 * API keys: each maps to one tenant, and every object the gateway serves belongs to a tenant.
 * Only a key's sha256 is stored. The keys of MH_GATEWAY_API_KEYS are written at start.
 */
import { createHash } from "node:crypto";
import type { Queryable } from "@metaharness/db";
import type { BootstrapKey } from "../config.js";

export function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** Stores the configured keys (idempotent); a key already bound to another tenant is rebound. */
export async function bootstrapApiKeys(db: Queryable, keys: readonly BootstrapKey[]): Promise<void> {
  for (const { key, tenant } of keys) {
    await db.query(
      `INSERT INTO gw_api_keys (key_hash, tenant, source) VALUES ($1, $2, 'config')
       ON CONFLICT (key_hash) DO UPDATE SET tenant = EXCLUDED.tenant, revoked_at = NULL`,
      [hashKey(key), tenant],
    );
  }
}
