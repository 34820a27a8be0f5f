/**
 * Opens the Db a URL names: a PostgreSQL server, or embedded PGlite (in memory or in a directory).
 */
import type { Db } from "./db.js";
import { createPgDb } from "./pg-db.js";
import { createPgliteDb, pgliteDataDir } from "./pglite-db.js";

export async function openDb(
  url: string,
  opts: { poolSize: number; onIdleError: (err: Error) => void; pgOptions?: string },
): Promise<Db> {
  const embedded = pgliteDataDir(url);
  return embedded === undefined ? createPgDb(url, opts.poolSize, opts.onIdleError, opts.pgOptions) : createPgliteDb(embedded.dataDir);
}
