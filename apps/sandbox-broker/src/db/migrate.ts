/**
 * Versioned migrations, applied at start, as the session log does it: each migrations/NNN_name.sql
 * runs once, in its own transaction, in order, under an advisory lock so two brokers starting
 * together do not race; a file changed after it was applied is refused. The broker keeps its own
 * bookkeeping table, so it can share a database with the session log.
 */
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import type { Pool } from "pg";
import { MhError } from "@metaharness/errors";

const MIGRATIONS_DIR = new URL("../../migrations/", import.meta.url);
// An arbitrary constant naming "sandbox-broker migrations" in pg_advisory_lock's key space.
const MIGRATION_LOCK_KEY = 0x6d680002;

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  readonly checksum: string;
}

export async function loadMigrations(dir: URL = MIGRATIONS_DIR): Promise<Migration[]> {
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

/** Applies every migration not yet applied; returns the versions it applied. */
export async function migrate(pool: Pool, migrations?: Migration[]): Promise<number[]> {
  const all = migrations ?? (await loadMigrations());
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS sandbox_broker_migrations (
      version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await client.query<{ version: number; checksum: string }>(
      "SELECT version, checksum FROM sandbox_broker_migrations",
    );
    const applied = new Map(rows.map((r) => [r.version, r.checksum]));
    const done: number[] = [];
    for (const m of all) {
      const checksum = applied.get(m.version);
      if (checksum !== undefined) {
        if (checksum !== m.checksum) {
          throw new MhError(
            "FAILED_PRECONDITION",
            `migration ${m.version}_${m.name} changed after it was applied; add a new migration instead`,
          );
        }
        continue;
      }
      await client.query("BEGIN");
      try {
        await client.query(m.sql);
        await client.query("INSERT INTO sandbox_broker_migrations (version, name, checksum) VALUES ($1, $2, $3)", [
          m.version,
          m.name,
          m.checksum,
        ]);
        await client.query("COMMIT");
      } catch (err) {
        await client.query("ROLLBACK");
        throw new MhError("INTERNAL", `migration ${m.version}_${m.name} failed`, { cause: err });
      }
      done.push(m.version);
    }
    return done;
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]).catch(() => undefined);
    client.release();
  }
}
