/**
 * One `mh dev` per data directory: PGlite keeps its databases there and two processes writing
 * the same files would corrupt them. The lock is a pid file; one whose process is gone is stale
 * and taken over.
 */
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { MhError } from "@metaharness/errors";

export const LOCK_FILE = "mh-dev.pid";

/** True while process `pid` exists (EPERM: it does, as another user's). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Takes the directory for this process; the returned function gives it back. */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(path, `${process.pid}\n`, { flag: "wx" });
      return () => rm(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const holder = Number((await readFile(path, "utf8").catch(() => "")).trim());
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && alive(holder)) {
      throw new MhError("FAILED_PRECONDITION", `another mh dev (pid ${holder}) uses ${dataDir}; stop it, or pass --data-dir or --memory`);
    }
    await rm(path, { force: true });
  }
  throw new MhError("ABORTED", `could not lock ${dataDir}: another mh dev is starting there`);
}
