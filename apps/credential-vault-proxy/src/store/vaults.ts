/**
 * Vaults in Postgres: create, read, change (name and metadata, under the row lock), archive (with
 * their credentials, whose secrets are erased), page through (per tenant, oldest first), delete
 * (with their credentials, by cascade). A session's own vault (session_id set) is created once
 * per session and never listed.
 */
import { MhError, invalidArgument } from "@metaharness/errors";
import type { Queryable } from "@metaharness/db";
import type { MetadataPatch, Vault } from "@metaharness/proto";
import { newVaultId } from "./ids.js";
import { patchMetadata } from "./metadata.js";

interface VaultRow {
  vault_id: string;
  ord: string;
  tenant: string;
  display_name: string;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
  session_id: string;
}

const COLUMNS = "vault_id, ord, tenant, display_name, metadata, created_at, updated_at, archived_at, session_id";
export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 500;

function toVault(row: VaultRow): Vault {
  return {
    vaultId: row.vault_id,
    tenant: row.tenant,
    displayName: row.display_name,
    metadata: row.metadata,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    archivedAt: row.archived_at === null ? undefined : new Date(row.archived_at),
    sessionId: row.session_id,
  };
}

/** A new vault; for a session (sessionId set) its one vault, created by the first call. */
export async function createVault(
  db: Queryable,
  v: { tenant: string; displayName: string; metadata: Record<string, string>; sessionId: string },
): Promise<Vault> {
  const { rows } = await db.query<VaultRow>(
    `INSERT INTO vaults (vault_id, tenant, display_name, metadata, session_id) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (session_id) WHERE session_id <> '' DO NOTHING RETURNING ${COLUMNS}`,
    [newVaultId(), v.tenant, v.displayName, JSON.stringify(v.metadata), v.sessionId],
  );
  if (rows[0] !== undefined) return toVault(rows[0]);
  // The session has one already: returned, unless it was archived (a session's own vault is made
  // once; the unique index holds archived ones too, so asking again would never succeed).
  const { rows: existing } = await db.query<VaultRow>(`SELECT ${COLUMNS} FROM vaults WHERE session_id = $1`, [v.sessionId]);
  const own = existing[0] === undefined ? undefined : toVault(existing[0]);
  if (own === undefined) throw new MhError("ABORTED", `the vault of session ${v.sessionId} was deleted while it was being created; retry`);
  if (own.archivedAt !== undefined) {
    throw new MhError("FAILED_PRECONDITION", `session ${v.sessionId}'s own vault ${own.vaultId} is archived; a session has one vault of its own, made once`, {
      field: "session_id",
    });
  }
  return own;
}

/** The session's own vault, if it has one (and it is not archived). */
export async function sessionVault(db: Queryable, sessionId: string): Promise<Vault | undefined> {
  const { rows } = await db.query<VaultRow>(`SELECT ${COLUMNS} FROM vaults WHERE session_id = $1 AND session_id <> '' AND archived_at IS NULL`, [sessionId]);
  return rows[0] === undefined ? undefined : toVault(rows[0]);
}

/** The vault; `lock` takes its row lock (inside a transaction). */
export async function getVault(db: Queryable, vaultId: string, lock = false): Promise<Vault> {
  const { rows } = await db.query<VaultRow>(`SELECT ${COLUMNS} FROM vaults WHERE vault_id = $1${lock ? " FOR UPDATE" : ""}`, [vaultId]);
  const row = rows[0];
  if (row === undefined) throw new MhError("NOT_FOUND", `vault ${vaultId} does not exist`, { field: "vault_id" });
  return toVault(row);
}

/** Refuses to change an archived vault. */
export function requireActive(vault: Vault): Vault {
  if (vault.archivedAt !== undefined) {
    throw new MhError("FAILED_PRECONDITION", `vault ${vault.vaultId} is archived and cannot change`, { field: "vault_id" });
  }
  return vault;
}

/** The active vaults of `ids` that exist, in the order of `ids`. */
export async function vaultsByIds(db: Queryable, ids: readonly string[]): Promise<Vault[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<VaultRow>(`SELECT ${COLUMNS} FROM vaults WHERE vault_id = ANY($1::text[]) AND archived_at IS NULL`, [ids]);
  const byId = new Map(rows.map((r) => [r.vault_id, toVault(r)]));
  return ids.map((id) => byId.get(id)).filter((v): v is Vault => v !== undefined);
}

export async function listVaults(
  db: Queryable,
  q: { tenant: string; pageSize: number; pageToken: string; includeArchived: boolean },
): Promise<{ vaults: Vault[]; nextPageToken: string }> {
  const size = q.pageSize === 0 ? DEFAULT_PAGE : Math.min(q.pageSize, MAX_PAGE);
  const after = ordToken(q.pageToken);
  const { rows } = await db.query<VaultRow>(
    `SELECT ${COLUMNS} FROM vaults WHERE session_id = '' AND ($1 = '' OR tenant = $1) AND ord > $2::bigint AND ($4 OR archived_at IS NULL) ORDER BY ord LIMIT $3`,
    [q.tenant, after, size + 1, q.includeArchived],
  );
  const page = rows.slice(0, size);
  const last = page[page.length - 1];
  return { vaults: page.map(toVault), nextPageToken: rows.length > size && last !== undefined ? String(last.ord) : "" };
}

const MAX_BIGINT = 2n ** 63n - 1n;

/** A page token of an `ord` keyset ("0" for the first page). */
export function ordToken(token: string): string {
  if (token === "") return "0";
  // A bigint: 19 digits may still be above its largest value (a Postgres error, not a client's).
  if (!/^\d{1,19}$/.test(token) || BigInt(token) > MAX_BIGINT) throw invalidArgument("page_token", "is not a token this service issued");
  return token;
}

export async function updateVault(
  db: Queryable,
  vaultId: string,
  change: { displayName: string | undefined; metadata: MetadataPatch | undefined },
): Promise<Vault> {
  const current = requireActive(await getVault(db, vaultId, true));
  const { rows } = await db.query<VaultRow>(
    `UPDATE vaults SET display_name = $2, metadata = $3, updated_at = now() WHERE vault_id = $1 RETURNING ${COLUMNS}`,
    [vaultId, change.displayName ?? current.displayName, JSON.stringify(patchMetadata(current.metadata, change.metadata))],
  );
  return toVault(rows[0]!);
}

/** Marks the vault archived (once: archiving again changes nothing). Its credentials are archived by the caller. */
export async function markVaultArchived(db: Queryable, vaultId: string): Promise<Vault> {
  const { rows } = await db.query<VaultRow>(
    `UPDATE vaults SET archived_at = COALESCE(archived_at, now()), updated_at = CASE WHEN archived_at IS NULL THEN now() ELSE updated_at END
     WHERE vault_id = $1 RETURNING ${COLUMNS}`,
    [vaultId],
  );
  const row = rows[0];
  if (row === undefined) throw new MhError("NOT_FOUND", `vault ${vaultId} does not exist`, { field: "vault_id" });
  return toVault(row);
}

export async function deleteVault(db: Queryable, vaultId: string): Promise<void> {
  const { rowCount } = await db.query("DELETE FROM vaults WHERE vault_id = $1", [vaultId]);
  if (rowCount === 0) throw new MhError("NOT_FOUND", `vault ${vaultId} does not exist`, { field: "vault_id" });
}
