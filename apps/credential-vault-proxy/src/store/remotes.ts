/**
 * Remotes the proxy opened for sandboxes: a git remote (scope: repository URLs) or an egress
 * endpoint (scope: allowed hosts), each reached with a random capability that only the broker
 * holds. The capability is stored as its SHA-256 digest: a database dump opens nothing. Remotes
 * end when they expire or when the broker closes the sandbox's remotes. An egress remote also
 * keeps its sandbox's certificate authority, the key sealed (egress/sandbox-ca.ts).
 */
import { createHash, randomBytes } from "node:crypto";
import type { Queryable } from "@metaharness/db";
import type { Sealed } from "../crypto/envelope.js";

export type RemoteKind = "git" | "egress";

export interface Remote {
  readonly kind: RemoteKind;
  readonly sessionId: string;
  readonly sandboxId: string;
  readonly scope: readonly string[];
  readonly expiresAt: Date;
  /** Egress: the sandbox's certificate authority. */
  readonly ca?: StoredCa | undefined;
}

export interface StoredCa {
  readonly certificatePem: string;
  readonly key: Sealed;
}

interface RemoteRow {
  kind: RemoteKind;
  session_id: string;
  sandbox_id: string;
  scope: string[];
  expires_at: Date;
  ca_certificate: string | null;
  ca_key_ciphertext: Uint8Array | null;
  ca_wrapped_key: Uint8Array | null;
  ca_master_key_id: string | null;
}

/** 32 random bytes, base64url: 43 characters. */
export const CAPABILITY = /^[A-Za-z0-9_-]{43}$/;

const digest = (capability: string): Buffer => createHash("sha256").update(capability, "utf8").digest();

export async function openRemote(db: Queryable, remote: Remote): Promise<string> {
  const capability = randomBytes(32).toString("base64url");
  await db.query("DELETE FROM remotes WHERE expires_at < now() - interval '1 hour'");
  await db.query(
    `INSERT INTO remotes (capability_hash, kind, session_id, sandbox_id, scope, expires_at, ca_certificate, ca_key_ciphertext, ca_wrapped_key, ca_master_key_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      digest(capability), remote.kind, remote.sessionId, remote.sandboxId, JSON.stringify(remote.scope), remote.expiresAt,
      remote.ca?.certificatePem ?? null, remote.ca?.key.ciphertext ?? null, remote.ca?.key.wrappedKey ?? null, remote.ca?.key.masterKeyId ?? null,
    ],
  );
  return capability;
}

/** The live remote of `kind` a capability opens, or undefined (unknown, expired, closed). */
export async function findRemote(db: Queryable, capability: string, kind: RemoteKind): Promise<Remote | undefined> {
  if (!CAPABILITY.test(capability)) return undefined;
  const { rows } = await db.query<RemoteRow>(
    `SELECT kind, session_id, sandbox_id, scope, expires_at, ca_certificate, ca_key_ciphertext, ca_wrapped_key, ca_master_key_id
     FROM remotes WHERE capability_hash = $1 AND kind = $2 AND expires_at > now()`,
    [digest(capability), kind],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  const ca =
    row.ca_certificate !== null && row.ca_key_ciphertext !== null && row.ca_wrapped_key !== null && row.ca_master_key_id !== null
      ? { certificatePem: row.ca_certificate, key: { ciphertext: Buffer.from(row.ca_key_ciphertext), wrappedKey: Buffer.from(row.ca_wrapped_key), masterKeyId: row.ca_master_key_id } }
      : undefined;
  return { kind: row.kind, sessionId: row.session_id, sandboxId: row.sandbox_id, scope: row.scope, expiresAt: new Date(row.expires_at), ca };
}

export async function closeSandboxRemotes(db: Queryable, sessionId: string, sandboxId: string): Promise<number> {
  const { rowCount } = await db.query("DELETE FROM remotes WHERE session_id = $1 AND sandbox_id = $2", [sessionId, sandboxId]);
  return rowCount;
}
