/**
 * Who a request acts for. Three credentials reach the gateway, told apart by their prefix:
 * - an API key: the tenant (every object of the tenant);
 * - an environment key (`mhek_`, issued per self-hosted environment): that environment's work
 *   queue, the one credential an EnvironmentWorker holds;
 * - a sessions token (`mhwt_`, in a polled work item's `secret`): that work item and its session,
 *   while the item's delivery is the current one.
 * API keys and environment keys are cached for a short time (hits and misses, bounded), so an
 * ordinary request costs no query and a revoked key stops working within the cache's TTL. The
 * cache is keyed by the credential itself, so a hit hashes nothing (sha256 per request was 1-3%
 * of the gateway's CPU); only a miss computes the hash the database stores. A credential longer
 * than any can be (MAX_KEY_CHARS) is refused before either: kept whole, a header's 16 KiB per
 * cached miss would let anyone fill the gateway's heap (160 MB at the cache's bound).
 * Sessions tokens are looked up every time: a lease that lapsed or passed to another worker
 * fences the old one at once.
 */
import type { Queryable } from "@metaharness/db";
import { hashKey } from "./api-keys.js";
import { tokenCurrentSql } from "./work-tokens.js";
import { ENVIRONMENT_KEY_PREFIX, MAX_KEY_CHARS, WORK_TOKEN_PREFIX } from "./key-prefixes.js";

const MAX_CACHED_KEYS = 10_000;

/** A key no credential can be (longer than any): known without a query to be no one's. */
const NONE = { principal: undefined } as const;

export type Principal =
  | { readonly kind: "api_key"; readonly tenant: string }
  | { readonly kind: "environment_key"; readonly tenant: string; readonly environmentId: string }
  | {
      readonly kind: "work_token";
      readonly tenant: string;
      readonly environmentId: string;
      readonly workId: string;
      readonly sessionId: string;
      /** Which delivery of the work item (which poll) the token was issued with. */
      readonly delivery: number;
      /** The item's current delivery, not stopped, its lease not lapsed: the token may act for the session. */
      readonly current: boolean;
    };

export type CredentialKind = Principal["kind"];

export const CREDENTIAL_NAMES: Readonly<Record<CredentialKind, string>> = {
  api_key: "an API key",
  environment_key: "an environment key",
  work_token: "a work item's sessions token",
};

type CachedKey = Extract<Principal, { kind: "api_key" | "environment_key" }>;

interface Cached {
  readonly principal: CachedKey | undefined;
  readonly until: number;
}

export class Principals {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly db: Queryable,
    private readonly ttlMs: number,
  ) {}

  /**
   * What is known of `key` without a query: `{ principal }` (undefined for an unknown or revoked
   * key) when kept or refused by its length; undefined when only `resolve` can say (a miss, an
   * expired copy, a sessions token).
   */
  kept(key: string): { readonly principal: Principal | undefined } | undefined {
    if (key.length > MAX_KEY_CHARS) return NONE;
    if (key.startsWith(WORK_TOKEN_PREFIX)) return undefined;
    const hit = this.cache.get(key);
    return hit !== undefined && hit.until > Date.now() ? hit : undefined;
  }

  /** The principal of `key`, or undefined for an unknown or revoked one. */
  async resolve(key: string): Promise<Principal | undefined> {
    const known = this.kept(key);
    if (known !== undefined) return known.principal;
    if (key.startsWith(WORK_TOKEN_PREFIX)) return this.workToken(hashKey(key));
    const now = Date.now();
    const hash = hashKey(key);
    const principal = key.startsWith(ENVIRONMENT_KEY_PREFIX) ? await this.environmentKey(hash) : await this.apiKey(hash);
    if (this.ttlMs > 0) {
      if (this.cache.size >= MAX_CACHED_KEYS) this.cache.clear();
      this.cache.set(key, { principal, until: now + this.ttlMs });
    }
    return principal;
  }

  private async apiKey(hash: string): Promise<CachedKey | undefined> {
    const { rows } = await this.db.query<{ tenant: string }>("SELECT tenant FROM gw_api_keys WHERE key_hash = $1 AND revoked_at IS NULL", [hash]);
    return rows[0] === undefined ? undefined : { kind: "api_key", tenant: rows[0].tenant };
  }

  private async environmentKey(hash: string): Promise<CachedKey | undefined> {
    const { rows } = await this.db.query<{ tenant: string; environment_id: string }>(
      "SELECT tenant, environment_id FROM gw_environment_keys WHERE key_hash = $1 AND revoked_at IS NULL",
      [hash],
    );
    const row = rows[0];
    return row === undefined ? undefined : { kind: "environment_key", tenant: row.tenant, environmentId: row.environment_id };
  }

  private async workToken(hash: string): Promise<Principal | undefined> {
    const { rows } = await this.db.query<{
      tenant: string;
      environment_id: string;
      work_id: string;
      session_id: string;
      delivery: number;
      current: boolean;
    }>(
      `SELECT w.tenant, w.environment_id, w.work_id, w.session_id, t.delivery, ${tokenCurrentSql("t.delivery", "$2")} AS current
         FROM gw_work_tokens t JOIN gw_work w ON w.work_id = t.work_id
        WHERE t.token_hash = $1`,
      [hash, new Date()],
    );
    const row = rows[0];
    if (row === undefined) return undefined;
    return {
      kind: "work_token",
      tenant: row.tenant,
      environmentId: row.environment_id,
      workId: row.work_id,
      sessionId: row.session_id,
      delivery: Number(row.delivery),
      current: row.current,
    };
  }
}
