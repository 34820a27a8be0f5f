/**
 * Credentials in Postgres. What leaves this module toward callers is a `Credential` (config and
 * dates, never a secret); the sealed secret is read only by the code that uses it (secrets.ts),
 * optionally under a row lock so a token refresh happens once across every instance.
 */
import { MhError } from "@metaharness/errors";
import type { Queryable } from "@metaharness/db";
import type { Credential, CredentialType } from "@metaharness/proto";
import type { Sealed } from "../crypto/envelope.js";
import { configFromJson, configToJson, typeOf, type CredentialConfig } from "./credential-config.js";

interface CredentialRow {
  credential_id: string;
  vault_id: string;
  type: number;
  display_name: string;
  config: unknown;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
  ord: string;
}

interface SealedRow extends CredentialRow {
  secret_ciphertext: Uint8Array;
  wrapped_key: Uint8Array;
  master_key_id: string;
  secret_version: number;
}

const COLUMNS = "credential_id, vault_id, type, display_name, config, metadata, created_at, updated_at, archived_at, ord";
const SEALED_COLUMNS = `${COLUMNS}, secret_ciphertext, wrapped_key, master_key_id, secret_version`;

/** Credentials a vault may hold: a bound on every scan of a session's vaults. */
export const MAX_CREDENTIALS_PER_VAULT = 1000;
export const DEFAULT_CREDENTIAL_PAGE = 50;
export const MAX_CREDENTIAL_PAGE = 500;

export interface StoredCredential {
  readonly credential: Credential;
  readonly config: CredentialConfig;
}

export interface SealedCredential extends StoredCredential {
  readonly sealed: Sealed;
  readonly secretVersion: number;
}

function toStored(row: CredentialRow): StoredCredential {
  const type = row.type as CredentialType;
  const config = configFromJson(type, row.config);
  return {
    config,
    credential: {
      credentialId: row.credential_id,
      vaultId: row.vault_id,
      type,
      displayName: row.display_name,
      config,
      createdAt: new Date(row.created_at),
      updatedAt: new Date(row.updated_at),
      metadata: row.metadata,
      archivedAt: row.archived_at === null ? undefined : new Date(row.archived_at),
    },
  };
}

function toSealed(row: SealedRow): SealedCredential {
  return {
    ...toStored(row),
    sealed: {
      ciphertext: Buffer.from(row.secret_ciphertext),
      wrappedKey: Buffer.from(row.wrapped_key),
      masterKeyId: row.master_key_id,
    },
    secretVersion: row.secret_version,
  };
}

export async function insertCredential(
  db: Queryable,
  c: { credentialId: string; vaultId: string; displayName: string; metadata: Record<string, string>; config: CredentialConfig; sealed: Sealed },
): Promise<Credential> {
  const { rows: count } = await db.query<{ n: string }>("SELECT count(*) AS n FROM credentials WHERE vault_id = $1", [c.vaultId]);
  if (Number(count[0]?.n ?? 0) >= MAX_CREDENTIALS_PER_VAULT) {
    throw new MhError("RESOURCE_EXHAUSTED", `vault ${c.vaultId} holds ${MAX_CREDENTIALS_PER_VAULT} credentials already`);
  }
  const { rows } = await db.query<CredentialRow>(
    `INSERT INTO credentials (credential_id, vault_id, type, display_name, metadata, config, secret_ciphertext, wrapped_key, master_key_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
    [
      c.credentialId,
      c.vaultId,
      typeOf(c.config),
      c.displayName,
      JSON.stringify(c.metadata),
      JSON.stringify(configToJson(c.config)),
      c.sealed.ciphertext,
      c.sealed.wrappedKey,
      c.sealed.masterKeyId,
    ],
  );
  return toStored(rows[0]!).credential;
}

/**
 * Writes display name, metadata and config of an existing credential (its type stays), and its
 * secret when `sealed` is given: only then does secret_version grow, so a refresh under way is
 * not told its token was replaced when it was not.
 */
export async function replaceCredential(
  db: Queryable,
  c: { credentialId: string; displayName: string; metadata: Record<string, string>; config: CredentialConfig; sealed: Sealed | undefined },
): Promise<Credential> {
  const params: unknown[] = [c.credentialId, c.displayName, JSON.stringify(c.metadata), JSON.stringify(configToJson(c.config))];
  let secret = "";
  if (c.sealed !== undefined) {
    params.push(c.sealed.ciphertext, c.sealed.wrappedKey, c.sealed.masterKeyId);
    secret = ", secret_ciphertext = $5, wrapped_key = $6, master_key_id = $7, secret_version = secret_version + 1";
  }
  const { rows } = await db.query<CredentialRow>(
    `UPDATE credentials SET display_name = $2, metadata = $3, config = $4${secret}, updated_at = now()
     WHERE credential_id = $1 RETURNING ${COLUMNS}`,
    params,
  );
  const row = rows[0];
  if (row === undefined) throw new MhError("NOT_FOUND", `credential ${c.credentialId} does not exist`, { field: "credential_id" });
  return toStored(row).credential;
}

/** Archives a credential (once), replacing its secret with `erased` (an empty bundle). */
export async function archiveCredential(db: Queryable, credentialId: string, erased: Sealed): Promise<Credential> {
  const { rows } = await db.query<CredentialRow>(
    `UPDATE credentials SET archived_at = now(), updated_at = now(), secret_ciphertext = $2, wrapped_key = $3, master_key_id = $4,
       secret_version = secret_version + 1
     WHERE credential_id = $1 AND archived_at IS NULL RETURNING ${COLUMNS}`,
    [credentialId, erased.ciphertext, erased.wrappedKey, erased.masterKeyId],
  );
  const row = rows[0];
  return row === undefined ? (await credentialById(db, credentialId)).credential : toStored(row).credential;
}

/** Ids of the active credentials of a vault (to archive them with it). */
export async function activeCredentialIds(db: Queryable, vaultId: string): Promise<string[]> {
  const { rows } = await db.query<{ credential_id: string }>(
    "SELECT credential_id FROM credentials WHERE vault_id = $1 AND archived_at IS NULL ORDER BY ord",
    [vaultId],
  );
  return rows.map((r) => r.credential_id);
}

/** The active credential of a vault, of one of `types`, for a (normalised) MCP server URL, other than `exceptId`. */
export async function activeMcpCredential(
  db: Queryable,
  q: { vaultId: string; serverUrl: string; types: readonly CredentialType[]; exceptId: string },
): Promise<string | undefined> {
  const { rows } = await db.query<{ credential_id: string }>(
    `SELECT credential_id FROM credentials
     WHERE vault_id = $1 AND type = ANY($2::smallint[]) AND archived_at IS NULL AND config->>'mcpServerUrl' = $3 AND credential_id <> $4 LIMIT 1`,
    [q.vaultId, q.types, q.serverUrl, q.exceptId],
  );
  return rows[0]?.credential_id;
}

/** Stores a new secret (and config, e.g. a new expiry) after a token refresh. */
export async function updateSecret(db: Queryable, credentialId: string, config: CredentialConfig, sealed: Sealed): Promise<void> {
  await db.query(
    `UPDATE credentials SET config = $2, secret_ciphertext = $3, wrapped_key = $4, master_key_id = $5,
       secret_version = secret_version + 1, updated_at = now() WHERE credential_id = $1`,
    [credentialId, JSON.stringify(configToJson(config)), sealed.ciphertext, sealed.wrappedKey, sealed.masterKeyId],
  );
}

/** A page of a vault's credentials, oldest first. */
export async function listCredentials(
  db: Queryable,
  q: { vaultId: string; pageSize: number; after: string; includeArchived: boolean },
): Promise<{ credentials: Credential[]; nextPageToken: string }> {
  const size = q.pageSize === 0 ? DEFAULT_CREDENTIAL_PAGE : Math.min(q.pageSize, MAX_CREDENTIAL_PAGE);
  const { rows } = await db.query<CredentialRow>(
    `SELECT ${COLUMNS} FROM credentials WHERE vault_id = $1 AND ord > $2::bigint AND ($4 OR archived_at IS NULL) ORDER BY ord LIMIT $3`,
    [q.vaultId, q.after, size + 1, q.includeArchived],
  );
  const page = rows.slice(0, size);
  const last = page[page.length - 1];
  return { credentials: page.map((r) => toStored(r).credential), nextPageToken: rows.length > size && last !== undefined ? last.ord : "" };
}

/** Active credentials of some types in `vaultIds` (config only), for matching. */
export async function credentialsOfType(db: Queryable, vaultIds: readonly string[], types: readonly CredentialType[]): Promise<StoredCredential[]> {
  if (vaultIds.length === 0) return [];
  const { rows } = await db.query<CredentialRow>(
    `SELECT ${COLUMNS} FROM credentials WHERE vault_id = ANY($1::text[]) AND type = ANY($2::smallint[]) AND archived_at IS NULL LIMIT $3`,
    [vaultIds, types, MAX_CREDENTIALS_PER_VAULT * vaultIds.length],
  );
  return rows.map(toStored);
}

/** One credential with its sealed secret; `lock` takes its row lock (inside a transaction). */
export async function sealedCredential(db: Queryable, credentialId: string, lock = false): Promise<SealedCredential> {
  const { rows } = await db.query<SealedRow>(
    `SELECT ${SEALED_COLUMNS} FROM credentials WHERE credential_id = $1${lock ? " FOR UPDATE" : ""}`,
    [credentialId],
  );
  const row = rows[0];
  if (row === undefined) throw new MhError("NOT_FOUND", `credential ${credentialId} does not exist`);
  return toSealed(row);
}

async function credentialById(db: Queryable, credentialId: string): Promise<StoredCredential> {
  const { rows } = await db.query<CredentialRow>(`SELECT ${COLUMNS} FROM credentials WHERE credential_id = $1`, [credentialId]);
  const row = rows[0];
  if (row === undefined) throw new MhError("NOT_FOUND", `credential ${credentialId} does not exist`, { field: "credential_id" });
  return toStored(row);
}

export async function credentialInVault(db: Queryable, vaultId: string, credentialId: string): Promise<StoredCredential> {
  const { rows } = await db.query<CredentialRow>(`SELECT ${COLUMNS} FROM credentials WHERE credential_id = $1 AND vault_id = $2`, [
    credentialId,
    vaultId,
  ]);
  const row = rows[0];
  if (row === undefined) {
    throw new MhError("NOT_FOUND", `credential ${credentialId} does not exist in vault ${vaultId}`, { field: "credential_id" });
  }
  return toStored(row);
}

export async function deleteCredential(db: Queryable, vaultId: string, credentialId: string): Promise<void> {
  const { rowCount } = await db.query("DELETE FROM credentials WHERE credential_id = $1 AND vault_id = $2", [credentialId, vaultId]);
  if (rowCount === 0) {
    throw new MhError("NOT_FOUND", `credential ${credentialId} does not exist in vault ${vaultId}`, { field: "credential_id" });
  }
}
