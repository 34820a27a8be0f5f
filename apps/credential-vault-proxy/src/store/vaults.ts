/**
 * Vaults in Postgres: create, read, change (name and metadata, under the row lock), archive (with
 * their credentials, whose secrets are erased), page through (per tenant, oldest first), delete
 * (with their credentials, by cascade).
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
}

const COLUMNS = "vault_id, ord, tenant, display_name, metadata, created_at, updated_at, archived_at";
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
  };
}

export async function createVault(
  db: Queryable,
  v: { tenant: string; displayName: string; metadata: Record<string, string> },
): Promise<Vault> {
  const { rows } = await db.query<VaultRow>(
    `INSERT INTO vaults (vault_id, tenant, display_name, metadata) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
    [newVaultId(), v.tenant, v.displayName, JSON.stringify(v.metadata)],
  );
  return toVault(rows[0]!);
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
    `SELECT ${COLUMNS} FROM vaults WHERE ($1 = '' OR tenant = $1) AND ord > $2::bigint AND ($4 OR archived_at IS NULL) ORDER BY ord LIMIT $3`,
    [q.tenant, after, size + 1, q.includeArchived],
  );
  const page = rows.slice(0, size);
  const last = page[page.length - 1];
  return { vaults: page.map(toVault), nextPageToken: rows.length > size && last !== undefined ? String(last.ord) : "" };
}

/** A page token of an `ord` keyset ("0" for the first page). */
export function ordToken(token: string): string {
  if (token === "") return "0";
  if (!/^\d{1,19}$/.test(token)) throw invalidArgument("page_token", "is not a token this service issued");
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
