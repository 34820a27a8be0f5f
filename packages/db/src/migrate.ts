/**
 * Versioned migrations, applied at start. Each file of a component's migrations directory named
 * NNN_name.sql runs once, in its own transaction, in order; an advisory lock per component keeps
 * two instances starting together from racing. A file that was applied and later changed is
 * refused (checksum), never re-run. Components (services) can share one database: each keeps
 * its own versions in mh_schema_migrations.
 */
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import type { Db } from "./db.js";
import { MhError } from "@metaharness/errors";

// Names "migrations" in pg_advisory_lock(int, int)'s key space; the second key is the component's.
const MIGRATION_LOCK_CLASS = 0x6d680001;

function componentKey(component: string): number {
  return createHash("sha256").update(component).digest().readInt32BE(0);
}

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  readonly checksum: string;
}

export async function loadMigrations(dir: URL): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith(".sql")).sort();
  return Promise.all(
    files.map(async (file) => {
      const match = /^(\d+)_([\w-]+)\.sql$/.exec(file);
      if (!match) throw new MhError("INTERNAL", `migration file ${file} is not named NNN_name.sql`);
      const sql = await readFile(new URL(file, dir), "utf8");
      return {
        version: Number(match[1]),
        name: match[2] ?? file,
        sql,
        checksum: createHash("sha256").update(sql).digest("hex"),
      };
    }),
  );
}

/** Applies every migration of `component` not yet applied; returns the versions it applied. */
export async function migrate(db: Db, component: string, dir: URL): Promise<number[]> {
  const all = await loadMigrations(dir);
  const key = componentKey(component);
  const lock = await db.openSession(`mh-migrate-${component}`, () => undefined);
  try {
    await lock.query("SELECT pg_advisory_lock($1, $2)", [MIGRATION_LOCK_CLASS, key]);
    await db.query(`CREATE TABLE IF NOT EXISTS mh_schema_migrations (
      component text NOT NULL, version integer NOT NULL, name text NOT NULL, checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (component, version))`);
    const { rows } = await db.query<{ version: number; checksum: string }>(
      "SELECT version, checksum FROM mh_schema_migrations WHERE component = $1",
      [component],
    );
    const applied = new Map(rows.map((r) => [r.version, r.checksum]));
    const done: number[] = [];
    for (const m of all) {
      const checksum = applied.get(m.version);
      if (checksum !== undefined) {
        if (checksum !== m.checksum) {
          throw new MhError(
            "FAILED_PRECONDITION",
            `${component} migration ${m.version}_${m.name} changed after it was applied; add a new migration instead`,
          );
        }
        continue;
      }
      try {
        await db.transaction(async (tx) => {
          await tx.exec(m.sql);
          await tx.query("INSERT INTO mh_schema_migrations (component, version, name, checksum) VALUES ($1, $2, $3, $4)", [
            component,
            m.version,
            m.name,
            m.checksum,
          ]);
        });
      } catch (err) {
        throw new MhError("INTERNAL", `${component} migration ${m.version}_${m.name} failed`, { cause: err });
      }
      done.push(m.version);
    }
    return done;
  } finally {
    await lock.query("SELECT pg_advisory_unlock($1, $2)", [MIGRATION_LOCK_CLASS, key]).catch(() => undefined);
    await lock.close();
  }
}
