/**
 * A session's resources change one at a time, each in one statement that edits the stored list
 * and token ids in place (no read-modify-write), so concurrent changes to one session compose,
 * and no transaction is held while the credential proxy and the session log are called (in
 * `mh dev` they share this database, whose transactions take turns). The session log, which
 * checks mount paths and counts under its own row lock, is the authority on what may be added;
 * this record follows it.
 */
import type { Db } from "@metaharness/db";
import { notFound } from "../errors/api-error.js";
import type { SessionResource } from "./resources.js";

/** A resource's token, as ids: the session's own vault and the credential in it. */
export interface StoredToken {
  readonly vaultId: string;
  readonly credentialId: string;
}

// The list without one resource, in order ('[]' rather than NULL when none is left).
const WITHOUT = `COALESCE((SELECT jsonb_agg(e ORDER BY n) FROM jsonb_array_elements(resources) WITH ORDINALITY AS x(e, n) WHERE e->>'id' <> $3), '[]'::jsonb)`;
const HAS = `EXISTS (SELECT 1 FROM jsonb_array_elements(resources) AS e WHERE e->>'id' = $3)`;

export class SessionResourceStore {
  constructor(private readonly db: Db) {}

  /** Appends a resource (and its token's ids); NOT_FOUND when the session is gone. */
  async add(tenant: string, sessionId: string, resource: SessionResource, token: StoredToken | undefined, now: Date): Promise<void> {
    const { rowCount } = await this.db.query(
      `UPDATE gw_sessions SET resources = resources || jsonb_build_array($3::jsonb),
         credential_vault_id = COALESCE(credential_vault_id, $4),
         resource_credentials = resource_credentials || $5::jsonb,
         updated_at = $6
       WHERE session_id = $1 AND tenant = $2`,
      [sessionId, tenant, JSON.stringify(resource), token?.vaultId ?? null, JSON.stringify(token === undefined ? {} : { [resource.id]: token.credentialId }), now],
    );
    if (rowCount === 0) throw notFound("session", sessionId);
  }

  /** Records a resource's new token (its updated_at moves); NOT_FOUND when the resource is gone. */
  async setToken(tenant: string, sessionId: string, resourceId: string, token: StoredToken, now: Date): Promise<void> {
    const { rowCount } = await this.db.query(
      `UPDATE gw_sessions SET
         resources = (SELECT jsonb_agg(CASE WHEN e->>'id' = $3 THEN jsonb_set(e, '{updated_at}', to_jsonb($6::text)) ELSE e END ORDER BY n)
                        FROM jsonb_array_elements(resources) WITH ORDINALITY AS x(e, n)),
         credential_vault_id = COALESCE(credential_vault_id, $4),
         resource_credentials = resource_credentials || jsonb_build_object($3::text, $5::text),
         updated_at = $7
       WHERE session_id = $1 AND tenant = $2 AND ${HAS}`,
      [sessionId, tenant, resourceId, token.vaultId, token.credentialId, now.toISOString(), now],
    );
    if (rowCount === 0) throw notFound("session resource", resourceId);
  }

  /** Removes a resource and its token's ids; NOT_FOUND when it was not there. */
  async remove(tenant: string, sessionId: string, resourceId: string, now: Date): Promise<void> {
    const { rowCount } = await this.db.query(
      `UPDATE gw_sessions SET resources = ${WITHOUT}, resource_credentials = resource_credentials - $3, updated_at = $4
       WHERE session_id = $1 AND tenant = $2 AND ${HAS}`,
      [sessionId, tenant, resourceId, now],
    );
    if (rowCount === 0) throw notFound("session resource", resourceId);
  }
}
