/**
 * The local API key of `mh dev`: generated once per data directory, kept in <dir>/api-key
 * (readable by its owner only), so clients on this machine (`mh sessions`, `mh run --url`) find
 * it without being told, and a restart does not invalidate the key a script was given.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";

export const KEY_FILE = "api-key";

export function keyPath(dataDir: string): string {
  return join(dataDir, KEY_FILE);
}

/** The key stored for `dataDir`, if there is one. */
export async function readDevKey(dataDir: string): Promise<string | undefined> {
  try {
    const key = (await readFile(keyPath(dataDir), "utf8")).trim();
    return key === "" ? undefined : key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** The key stored for `dataDir`, created on first use. */
export async function ensureDevKey(dataDir: string): Promise<{ key: string; path: string; created: boolean }> {
  const path = keyPath(dataDir);
  const existing = await readDevKey(dataDir);
  if (existing !== undefined) return { key: existing, path, created: false };
  await mkdir(dataDir, { recursive: true });
  const key = newKey();
  // "wx": if another process created it meanwhile, use theirs.
  try {
    await writeFile(path, `${key}\n`, { mode: 0o600, flag: "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    return { key: (await readDevKey(dataDir)) ?? key, path, created: false };
  }
  return { key, path, created: true };
}

/** A fresh key the gateway accepts (16-256 printable characters). */
export function newKey(): string {
  return `mh-local-${randomBytes(24).toString("base64url")}`;
}
