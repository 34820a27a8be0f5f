/**
 * The master keys that wrap every data key. Each lives in a file (MH_MASTER_KEY_FILE, the active
 * one; MH_PREVIOUS_MASTER_KEY_FILES, older ones kept only to unwrap until a rotation re-wraps
 * their data keys). A key's id is derived from the key itself, so no file can claim another key's
 * id, and several keys coexist without a naming scheme. Keys are held as KeyObjects: they never
 * print, and nothing hands out their bytes.
 */
import { createHash, createSecretKey, randomBytes, type KeyObject } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { MhError } from "@metaharness/errors";

export const MASTER_KEY_BYTES = 32;

export interface MasterKey {
  /** "mk_" and 16 hex digits of a hash of the key. */
  readonly id: string;
  readonly key: KeyObject;
}

export interface KeyFileWarning {
  readonly file: string;
  readonly problem: string;
}

export class MasterKeyring {
  private readonly byId: ReadonlyMap<string, MasterKey>;

  constructor(
    readonly active: MasterKey,
    previous: readonly MasterKey[],
  ) {
    this.byId = new Map([...previous, active].map((k) => [k.id, k]));
  }

  get(id: string): MasterKey | undefined {
    return this.byId.get(id);
  }

  get ids(): string[] {
    return [...this.byId.keys()];
  }
}

/** Reads the active key and the previous ones; `warn` hears about key files others can read. */
export async function loadMasterKeyring(
  activeFile: string,
  previousFiles: readonly string[],
  warn: (w: KeyFileWarning) => void,
): Promise<MasterKeyring> {
  const active = await readKeyFile(activeFile, warn);
  const previous = await Promise.all(previousFiles.map((f) => readKeyFile(f, warn)));
  return new MasterKeyring(
    active,
    previous.filter((k) => k.id !== active.id),
  );
}

async function readKeyFile(file: string, warn: (w: KeyFileWarning) => void): Promise<MasterKey> {
  let text: string;
  try {
    const info = await stat(file);
    if ((info.mode & 0o077) !== 0) warn({ file, problem: "is readable by group or others (chmod 600 it)" });
    text = (await readFile(file, "utf8")).trim();
  } catch (err) {
    throw new MhError("FAILED_PRECONDITION", `master key file ${file} cannot be read`, { cause: err });
  }
  return masterKeyFrom(parseKey(text, file));
}

function parseKey(text: string, file: string): Buffer {
  const bytes = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, "hex") : Buffer.from(text, "base64");
  if (bytes.length !== MASTER_KEY_BYTES || (!/^[0-9a-fA-F]{64}$/.test(text) && !/^[A-Za-z0-9+/]{43}=$/.test(text))) {
    throw new MhError("FAILED_PRECONDITION", `master key file ${file} must hold ${MASTER_KEY_BYTES} bytes as base64 or hex`);
  }
  return bytes;
}

export function masterKeyFrom(bytes: Buffer): MasterKey {
  const id = `mk_${createHash("sha256").update("metaharness master key id\0").update(bytes).digest("hex").slice(0, 16)}`;
  const key = createSecretKey(bytes);
  bytes.fill(0);
  return { id, key };
}

/** A fresh master key as a key file's content (base64), for operators and tests. */
export function newMasterKeyText(): string {
  return `${randomBytes(MASTER_KEY_BYTES).toString("base64")}\n`;
}
