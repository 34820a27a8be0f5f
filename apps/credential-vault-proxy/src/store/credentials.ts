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
  created_at: Date;
  updated_at: Date;
}

interface SealedRow extends CredentialRow {
  secret_ciphertext: Uint8Array;
  wrapped_key: Uint8Array;
  master_key_id: string;
  secret_version: number;
}

const COLUMNS = "credential_id, vault_id, type, display_name, config, created_at, updated_at";
const SEALED_COLUMNS = `${COLUMNS}, secret_ciphertext, wrapped_key, master_key_id, secret_version`;

/** Credentials a vault may hold: a bound on every scan of a session's vaults. */
export const MAX_CREDENTIALS_PER_VAULT = 1000;

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
  c: { credentialId: string; vaultId: string; displayName: string; config: CredentialConfig; sealed: Sealed },
): Promise<Credential> {
  const { rows: count } = await db.query<{ n: string }>("SELECT count(*) AS n FROM credentials WHERE vault_id = $1", [c.vaultId]);
  if (Number(count[0]?.n ?? 0) >= MAX_CREDENTIALS_PER_VAULT) {
    throw new MhError("RESOURCE_EXHAUSTED", `vault ${c.vaultId} holds ${MAX_CREDENTIALS_PER_VAULT} credentials already`);
  }
  const { rows } = await db.query<CredentialRow>(
    `INSERT INTO credentials (credential_id, vault_id, type, display_name, config, secret_ciphertext, wrapped_key, master_key_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [c.credentialId, c.vaultId, typeOf(c.config), c.displayName, JSON.stringify(configToJson(c.config)), c.sealed.ciphertext, c.sealed.wrappedKey, c.sealed.masterKeyId],
  );
  return toStored(rows[0]!).credential;
}

/** Replaces config, display name and secret of an existing credential (its type stays). */
export async function replaceCredential(
  db: Queryable,
  c: { credentialId: string; displayName: string; config: CredentialConfig; sealed: Sealed },
): Promise<Credential> {
  const { rows } = await db.query<CredentialRow>(
    `UPDATE credentials SET display_name = $2, config = $3, secret_ciphertext = $4, wrapped_key = $5, master_key_id = $6,
       secret_version = secret_version + 1, updated_at = now()
     WHERE credential_id = $1 RETURNING ${COLUMNS}`,
    [c.credentialId, c.displayName, JSON.stringify(configToJson(c.config)), c.sealed.ciphertext, c.sealed.wrappedKey, c.sealed.masterKeyId],
  );
  const row = rows[0];
  if (row === undefined) throw new MhError("NOT_FOUND", `credential ${c.credentialId} does not exist`, { field: "credential_id" });
  return toStored(row).credential;
}

/** Stores a new secret (and config, e.g. a new expiry) after a token refresh. */
export async function updateSecret(db: Queryable, credentialId: string, config: CredentialConfig, sealed: Sealed): Promise<void> {
  await db.query(
    `UPDATE credentials SET config = $2, secret_ciphertext = $3, wrapped_key = $4, master_key_id = $5,
       secret_version = secret_version + 1, updated_at = now() WHERE credential_id = $1`,
    [credentialId, JSON.stringify(configToJson(config)), sealed.ciphertext, sealed.wrappedKey, sealed.masterKeyId],
  );
}

export async function listCredentials(db: Queryable, vaultId: string): Promise<Credential[]> {
  const { rows } = await db.query<CredentialRow>(
    `SELECT ${COLUMNS} FROM credentials WHERE vault_id = $1 ORDER BY created_at, credential_id LIMIT $2`,
    [vaultId, MAX_CREDENTIALS_PER_VAULT],
  );
  return rows.map((r) => toStored(r).credential);
}

/** Credentials of one type in `vaultIds` (config only), for matching. */
export async function credentialsOfType(db: Queryable, vaultIds: readonly string[], type: CredentialType): Promise<StoredCredential[]> {
  if (vaultIds.length === 0) return [];
  const { rows } = await db.query<CredentialRow>(
    `SELECT ${COLUMNS} FROM credentials WHERE vault_id = ANY($1::text[]) AND type = $2 LIMIT $3`,
    [vaultIds, type, MAX_CREDENTIALS_PER_VAULT * vaultIds.length],
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
