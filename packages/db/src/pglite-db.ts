/**
 * The Db on embedded Postgres (PGlite), for the single-process default: the same SQL and
 * migrations as the server, in this process, in memory or in a directory. PGlite is one backend,
 * so a "session" is that backend and transactions are serialized by PGlite itself.
 */
import { PGlite } from "@electric-sql/pglite";
import type { Db, QueryResult, Queryable } from "./db.js";

interface PgliteLike {
  query<R>(text: string, params?: unknown[]): Promise<{ rows: R[]; affectedRows?: number }>;
  exec(script: string): Promise<unknown>;
}

function queryable(target: PgliteLike): Queryable {
  return {
    async query<R>(text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      const result = await target.query<R>(text, params === undefined ? undefined : [...params]);
      return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length };
    },
    async exec(script: string): Promise<void> {
      await target.exec(script);
    },
  };
}

/** `dataDir` undefined: in memory. */
export async function createPgliteDb(dataDir: string | undefined): Promise<Db> {
  const db = await PGlite.create(dataDir === undefined ? undefined : { dataDir });
  const base = queryable(db);
  return {
    query: <R>(text: string, params?: readonly unknown[]) => base.query<R>(text, params),
    exec: (script: string) => base.exec(script),
    transaction: (fn) => db.transaction((tx) => fn(queryable(tx))),
    openSession: () => Promise.resolve({ ...base, close: () => Promise.resolve() }),
    async listen(channel, onNotify) {
      const unlisten = await db.listen(channel, onNotify);
      return unlisten;
    },
    end: () => db.close(),
  };
}

/** Parses `pglite:memory` or `pglite:///absolute/dir`; undefined when the URL is not PGlite's. */
export function pgliteDataDir(url: string): { dataDir: string | undefined } | undefined {
  if (url === "pglite:memory" || url === "pglite://") return { dataDir: undefined };
  if (url.startsWith("pglite://")) return { dataDir: decodeURIComponent(url.slice("pglite://".length)) };
  return undefined;
}
