/**
 * The Db on embedded Postgres (PGlite), for the single-process default: the same SQL and
 * migrations as the server, in this process, in memory or in a directory. PGlite is one backend,
 * so a "session" is that backend and transactions are serialized by PGlite itself.
 *
 * One PGlite costs ~1-2 s to start (an in-memory one starts from a template, pglite-template.ts)
 * and a few hundred MB, so the services of one process share
 * one: every Db opened on the same directory (two PGlites on one directory would corrupt it), or
 * on the same named in-memory database, is a handle to one instance, closed with the last handle.
 * Their tables never collide (as on a shared server, each service's migrations own their tables).
 * The price: an open transaction holds the instance for every service of the process, so code
 * must never wait on another service inside a transaction (it would wait on itself), and a
 * transaction that waits on the outside world (the proxy's OAuth refresh, under its row lock)
 * pauses the whole embedded stack for that long.
 */
import { resolve } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import type { Db, QueryResult, Queryable } from "./db.js";
import { clientError } from "./client-errors.js";
import { createFromTemplate } from "./pglite-template.js";

interface PgliteLike {
  query<R>(text: string, params?: unknown[]): Promise<{ rows: R[]; affectedRows?: number }>;
  exec(script: string): Promise<unknown>;
}

function queryable(target: PgliteLike): Queryable {
  return {
    async query<R>(text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      try {
        const result = await target.query<R>(text, params === undefined ? undefined : [...params]);
        return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length };
      } catch (err) {
        throw clientError(err);
      }
    },
    async exec(script: string): Promise<void> {
      await target.exec(script);
    },
  };
}

interface Shared {
  readonly instance: Promise<PGlite>;
  handles: number;
}

/** Open instances by key: an absolute directory, or "memory:<name>". */
const shared = new Map<string, Shared>();

export type PgliteTarget =
  | { readonly kind: "private-memory" }
  | { readonly kind: "shared-memory"; readonly name: string }
  | { readonly kind: "directory"; readonly dataDir: string };

export async function createPgliteDb(target: PgliteTarget): Promise<Db> {
  if (target.kind === "private-memory") {
    const db = await createFromTemplate();
    return wrap(db, () => db.close());
  }
  const key = target.kind === "directory" ? target.dataDir : `memory:${target.name}`;
  let entry = shared.get(key);
  if (entry === undefined) {
    const instance = target.kind === "directory" ? PGlite.create({ dataDir: target.dataDir }) : createFromTemplate();
    entry = { instance, handles: 0 };
    shared.set(key, entry);
    instance.catch(() => shared.delete(key));
  }
  entry.handles += 1;
  const held = entry;
  let db: PGlite;
  try {
    db = await held.instance;
  } catch (err) {
    held.handles -= 1;
    throw err;
  }
  let ended = false;
  return wrap(db, async () => {
    if (ended) return;
    ended = true;
    held.handles -= 1;
    if (held.handles > 0) return;
    shared.delete(key);
    await db.close();
  });
}

function wrap(db: PGlite, end: () => Promise<void>): Db {
  const base = queryable(db);
  return {
    query: <R>(text: string, params?: readonly unknown[]) => base.query<R>(text, params),
    exec: (script: string) => base.exec(script),
    transaction: (fn) => db.transaction((tx) => fn(queryable(tx))),
    // One connection for everything: session settings would change it for every caller.
    openSession: () => Promise.resolve({ ...base, close: () => Promise.resolve() }),
    async listen(channel, onNotify) {
      const unlisten = await db.listen(channel, onNotify);
      return unlisten;
    },
    end,
  };
}

/**
 * Parses `pglite:memory` (a private in-memory database), `pglite:memory:<name>` (an in-memory
 * database shared by every Db of this process opened with that name) or `pglite:///absolute/dir`;
 * undefined when the URL is not PGlite's.
 */
export function pgliteTarget(url: string): PgliteTarget | undefined {
  if (url === "pglite:memory" || url === "pglite://") return { kind: "private-memory" };
  if (url.startsWith("pglite:memory:")) return { kind: "shared-memory", name: url.slice("pglite:memory:".length) };
  if (url.startsWith("pglite://")) return { kind: "directory", dataDir: resolve(decodeURIComponent(url.slice("pglite://".length))) };
  return undefined;
}
