/**
 * A fresh database per test file on the real Postgres server (infra/postgres/up.sh), dropped
 * afterwards, so tests never see each other's rows.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";

export const ADMIN_URL =
  process.env["MH_DATABASE_URL"] ?? "postgres://metaharness:metaharness@127.0.0.1:5432/metaharness";

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(prefix = "mh_test"): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  try {
    await admin.connect();
  } catch (err) {
    throw new Error(`Postgres is not reachable at ${ADMIN_URL}: start it with infra/up.sh`, { cause: err });
  }
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
