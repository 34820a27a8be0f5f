/**
 * API keys: each maps to one tenant, and every object the gateway serves belongs to a tenant.
 * Only a key's sha256 is stored. Lookups are cached for a short time (bounded, both hits and
 * misses), so an ordinary request costs no query and a flood of bad keys costs at most one
 * query per distinct key per TTL.
 */
import { createHash } from "node:crypto";
import type { Queryable } from "@metaharness/db";
import type { BootstrapKey } from "../config.js";

const MAX_CACHED_KEYS = 10_000;

export function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

interface Cached {
  readonly tenant: string | undefined;
  readonly until: number;
}

export class ApiKeys {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly db: Queryable,
    private readonly ttlMs: number,
  ) {}

  /** Stores the configured keys (idempotent); a key already bound to another tenant is rebound. */
  async bootstrap(keys: readonly BootstrapKey[]): Promise<void> {
    for (const { key, tenant } of keys) {
      await this.db.query(
        `INSERT INTO gw_api_keys (key_hash, tenant, source) VALUES ($1, $2, 'config')
         ON CONFLICT (key_hash) DO UPDATE SET tenant = EXCLUDED.tenant, revoked_at = NULL`,
        [hashKey(key), tenant],
      );
    }
    this.cache.clear();
  }

  /** The tenant of `key`, or undefined for an unknown or revoked key. */
  async tenantOf(key: string): Promise<string | undefined> {
    const hash = hashKey(key);
    const now = Date.now();
    const hit = this.cache.get(hash);
    if (hit !== undefined && hit.until > now) return hit.tenant;
    const { rows } = await this.db.query<{ tenant: string }>(
      "SELECT tenant FROM gw_api_keys WHERE key_hash = $1 AND revoked_at IS NULL",
      [hash],
    );
    const tenant = rows[0]?.tenant;
    if (this.ttlMs > 0) {
      if (this.cache.size >= MAX_CACHED_KEYS) this.cache.clear();
      this.cache.set(hash, { tenant, until: now + this.ttlMs });
    }
    return tenant;
  }
}
