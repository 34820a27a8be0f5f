/**
 * A new in-memory PGlite starts from a template: the data directory of a freshly initialised,
 * empty one, dumped once per machine and PGlite version into a cache file, then loaded from it.
 * PGlite's own start runs initdb in WebAssembly: 12 to 18 s on the loaded 2-core VM, most of the
 * start of every `mh run` and `mh demo` stack and of every test's in-memory database; loading the
 * dump took 1.9 s there. The file is written whole and renamed into place, with its SHA-256 beside
 * it; a template that is missing, does not match its hash, or will not load is passed over: the
 * database is made the slow way and the file written again. Nothing depends on the cache existing.
 */
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { PGlite } from "@electric-sql/pglite";

/** The installed PGlite's version: a dump is only loaded by the version that wrote it. */
const PGLITE_VERSION = ((): string => {
  const main = createRequire(import.meta.url).resolve("@electric-sql/pglite");
  return (JSON.parse(readFileSync(join(dirname(main), "..", "package.json"), "utf8")) as { version: string }).version;
})();

/**
 * Where the template lives: MH_CACHE, the cache infra/lib.sh keeps built binaries in (default
 * ~/.cache/metaharness), so every checkout on the machine shares it. Read here, not in a service's
 * config: every service that opens an in-memory PGlite would otherwise pass it down the same way.
 */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const set = env["MH_CACHE"];
  return set !== undefined && set !== "" ? set : join(homedir(), ".cache", "metaharness");
}

export function templateFile(cacheDir: string): string {
  return join(cacheDir, "pglite", `empty-${PGLITE_VERSION}.tar`);
}

/** A new, empty in-memory PGlite, from the template in `cacheDir` when there is a good one. */
export async function createFromTemplate(cacheDir: string = defaultCacheDir()): Promise<PGlite> {
  const file = templateFile(cacheDir);
  const template = await readTemplate(file);
  if (template !== undefined) {
    try {
      return await PGlite.create({ loadDataDir: new Blob([template]) });
    } catch {
      // Written by a PGlite that reads it differently: made again below.
    }
  }
  const db = await PGlite.create();
  await saveTemplate(db, file).catch(() => undefined);
  return db;
}

async function readTemplate(file: string): Promise<Uint8Array | undefined> {
  try {
    const [bytes, sum] = await Promise.all([readFile(file), readFile(`${file}.sha256`, "utf8")]);
    return sha256(bytes) === sum.trim() ? bytes : undefined;
  } catch {
    return undefined;
  }
}

/** Dumps a fresh instance (it stays usable) and puts the file in place whole: temp name, then rename. */
async function saveTemplate(db: PGlite, file: string): Promise<void> {
  const bytes = new Uint8Array(await (await db.dumpDataDir("none")).arrayBuffer());
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}-${randomBytes(4).toString("hex")}`;
  try {
    await writeFile(`${tmp}.sha256`, `${sha256(bytes)}\n`);
    await writeFile(tmp, bytes);
    // The hash first: a reader that finds the new tar with the old hash passes it over, never loads a torn one.
    await rename(`${tmp}.sha256`, `${file}.sha256`);
    await rename(tmp, file);
  } finally {
    await rm(tmp, { force: true });
    await rm(`${tmp}.sha256`, { force: true });
  }
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}
