/**
 * Master-key rotation: every data key not yet wrapped by the active master key is unwrapped with
 * its old key and wrapped again with the active one, in batches, each row under its row lock (a
 * token refresh writing the same row waits, or is waited for). Secrets' ciphertexts are never
 * touched. When it returns, the previous key files can be removed.
 */
import type { Db } from "@metaharness/db";
import { rewrap } from "../crypto/envelope.js";
import type { MasterKeyring } from "../crypto/master-keys.js";

const BATCH = 200;

interface WrappedRow {
  credential_id: string;
  secret_ciphertext: Uint8Array;
  wrapped_key: Uint8Array;
  master_key_id: string;
}

export async function rotateMasterKey(db: Db, keyring: MasterKeyring): Promise<{ activeKeyId: string; rewrapped: number }> {
  const activeKeyId = keyring.active.id;
  let rewrapped = 0;
  for (;;) {
    const done = await db.transaction(async (tx) => {
      const { rows } = await tx.query<WrappedRow>(
        `SELECT credential_id, secret_ciphertext, wrapped_key, master_key_id FROM credentials
         WHERE master_key_id <> $1 ORDER BY credential_id LIMIT $2 FOR UPDATE`,
        [activeKeyId, BATCH],
      );
      for (const row of rows) {
        const next = rewrap(
          { ciphertext: Buffer.from(row.secret_ciphertext), wrappedKey: Buffer.from(row.wrapped_key), masterKeyId: row.master_key_id },
          row.credential_id,
          keyring,
        );
        await tx.query("UPDATE credentials SET wrapped_key = $2, master_key_id = $3 WHERE credential_id = $1", [
          row.credential_id,
          next.wrappedKey,
          next.masterKeyId,
        ]);
      }
      return rows.length;
    });
    rewrapped += done;
    if (done < BATCH) return { activeKeyId, rewrapped };
  }
}

/** How many data keys each master key wraps (at start, to say which keys are still needed). */
export async function dataKeysByMasterKey(db: Db): Promise<Map<string, number>> {
  const { rows } = await db.query<{ master_key_id: string; n: string }>(
    "SELECT master_key_id, count(*) AS n FROM credentials GROUP BY master_key_id",
  );
  return new Map(rows.map((r) => [r.master_key_id, Number(r.n)]));
}
