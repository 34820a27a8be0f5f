/**
 * Opens the Db a URL names: a PostgreSQL server, or embedded PGlite (in memory or in a directory;
 * see pglite-db.ts for the URL forms and how the services of one process share one instance).
 */
import type { Db } from "./db.js";
import { createPgDb } from "./pg-db.js";
import { createPgliteDb, pgliteTarget } from "./pglite-db.js";

export async function openDb(
  url: string,
  opts: { poolSize: number; onIdleError: (err: Error) => void; pgOptions?: string },
): Promise<Db> {
  const embedded = pgliteTarget(url);
  return embedded === undefined ? createPgDb(url, opts.poolSize, opts.onIdleError, opts.pgOptions) : createPgliteDb(embedded);
}
