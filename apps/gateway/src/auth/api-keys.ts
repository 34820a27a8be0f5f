/**
 * API keys: each maps to one tenant, and every object the gateway serves belongs to a tenant.
 * Only a key's sha256 is stored. The keys of MH_GATEWAY_API_KEYS are written at start, and are
 * the only ones that work.
 */
import { createHash } from "node:crypto";
import type { Db } from "@metaharness/db";

export function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** A key the gateway accepts at start, and the tenant it acts for. */
export interface BootstrapKey {
  readonly key: string;
  readonly tenant: string;
}

/**
 * Makes the configured keys the ones that work: each is stored (a key already bound to another
 * tenant is rebound, a revoked one comes back), and a key configured before but no longer listed
 * is revoked, so taking a key out of MH_GATEWAY_API_KEYS and restarting is how it is withdrawn.
 * Every instance of a deployment is given the same list. An instance given none changes nothing:
 * an unset variable (a one-off instance, a mistake) must not revoke every key of a deployment.
 */
export async function bootstrapApiKeys(db: Db, keys: readonly BootstrapKey[]): Promise<{ revoked: number }> {
  if (keys.length === 0) return { revoked: 0 };
  return db.transaction(async (tx) => {
    for (const { key, tenant } of keys) {
      await tx.query(
        `INSERT INTO gw_api_keys (key_hash, tenant, source) VALUES ($1, $2, 'config')
         ON CONFLICT (key_hash) DO UPDATE SET tenant = EXCLUDED.tenant, revoked_at = NULL`,
        [hashKey(key), tenant],
      );
    }
    const { rowCount } = await tx.query(
      "UPDATE gw_api_keys SET revoked_at = now() WHERE source = 'config' AND revoked_at IS NULL AND NOT (key_hash = ANY($1::text[]))",
      [keys.map((k) => hashKey(k.key))],
    );
    return { revoked: rowCount ?? 0 };
  });
}
