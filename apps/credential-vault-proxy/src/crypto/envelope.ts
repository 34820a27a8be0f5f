/**
 * Envelope encryption of credential secrets with AES-256-GCM. Each credential gets its own random
 * data key, which encrypts the secret; the data key is stored wrapped (encrypted) by a master key
 * and recorded with that key's id. Rotating the master key re-wraps data keys and never touches a
 * secret's ciphertext. Both layers are bound to their credential by AAD, so a ciphertext or a
 * wrapped key copied onto another row does not decrypt.
 *
 * Layout of both blobs: version byte (1) | IV (12) | GCM tag (16) | ciphertext.
 */
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from "node:crypto";
import { MhError } from "@metaharness/errors";
import type { MasterKey, MasterKeyring } from "./master-keys.js";

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const DATA_KEY_BYTES = 32;
const HEADER = 1 + IV_BYTES + TAG_BYTES;

export interface Sealed {
  /** The secret, encrypted by the data key. */
  readonly ciphertext: Buffer;
  /** The data key, encrypted by the master key `masterKeyId`. */
  readonly wrappedKey: Buffer;
  readonly masterKeyId: string;
}

const secretAad = (credentialId: string): string => `mh:credential-secret:v1:${credentialId}`;
const keyAad = (credentialId: string, masterKeyId: string): string => `mh:data-key:v1:${credentialId}:${masterKeyId}`;

/** Encrypts `plaintext` for credential `credentialId` under a fresh data key and the active master key. */
export function seal(plaintext: Buffer, credentialId: string, keyring: MasterKeyring): Sealed {
  const dataKey = randomBytes(DATA_KEY_BYTES);
  try {
    const ciphertext = encrypt(createSecretKey(dataKey), plaintext, secretAad(credentialId));
    const { active } = keyring;
    return { ciphertext, wrappedKey: encrypt(active.key, dataKey, keyAad(credentialId, active.id)), masterKeyId: active.id };
  } finally {
    dataKey.fill(0);
  }
}

/** Decrypts a sealed secret; FAILED_PRECONDITION when its master key is not loaded, DATA_LOSS when it does not verify. */
export function open(sealed: Sealed, credentialId: string, keyring: MasterKeyring): Buffer {
  const dataKey = unwrap(sealed, credentialId, keyring);
  try {
    return decrypt(createSecretKey(dataKey), sealed.ciphertext, secretAad(credentialId), credentialId);
  } finally {
    dataKey.fill(0);
  }
}

/** The same data key wrapped by the active master key (a rotation step); the ciphertext is unchanged. */
export function rewrap(sealed: Sealed, credentialId: string, keyring: MasterKeyring): Sealed {
  const { active } = keyring;
  if (sealed.masterKeyId === active.id) return sealed;
  const dataKey = unwrap(sealed, credentialId, keyring);
  try {
    return { ...sealed, wrappedKey: encrypt(active.key, dataKey, keyAad(credentialId, active.id)), masterKeyId: active.id };
  } finally {
    dataKey.fill(0);
  }
}

function unwrap(sealed: Sealed, credentialId: string, keyring: MasterKeyring): Buffer {
  const master: MasterKey | undefined = keyring.get(sealed.masterKeyId);
  if (master === undefined) {
    throw new MhError(
      "FAILED_PRECONDITION",
      `credential ${credentialId} is wrapped by master key ${sealed.masterKeyId}, which is not loaded (loaded: ${keyring.ids.join(", ")})`,
    );
  }
  return decrypt(master.key, sealed.wrappedKey, keyAad(credentialId, master.id), credentialId);
}

function encrypt(key: KeyObject, plaintext: Buffer, aad: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(aad, "utf8"));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
}

function decrypt(key: KeyObject, blob: Buffer, aad: string, credentialId: string): Buffer {
  if (blob.length < HEADER || blob[0] !== VERSION) {
    throw new MhError("DATA_LOSS", `credential ${credentialId}: encrypted blob has an unknown format`);
  }
  const decipher = createDecipheriv("aes-256-gcm", key, blob.subarray(1, 1 + IV_BYTES), { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(aad, "utf8"));
  decipher.setAuthTag(blob.subarray(1 + IV_BYTES, HEADER));
  try {
    return Buffer.concat([decipher.update(blob.subarray(HEADER)), decipher.final()]);
  } catch (err) {
    throw new MhError("DATA_LOSS", `credential ${credentialId}: encrypted blob does not verify`, { cause: err });
  }
}
