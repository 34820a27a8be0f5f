/**
 * The outbox relay's connection settings, on the real Postgres: a relay's commits do not wait for
 * a WAL flush (a lost DELETE only republishes), and Postgres ends the connection of a relay host
 * that vanished within ~30 s, freeing its shard locks. A session refused by Postgres (a setting
 * it does not know) is closed, not left open holding nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgDb, type Db } from "@metaharness/db";
import { RELAY_SESSION_SETTINGS } from "@metaharness/session-log";
import { createTestDatabase, type TestDatabase } from "../../support/postgres.js";

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  db = createPgDb(database.url, 2, () => undefined);
});

afterAll(async () => {
  await db.end();
  await database.drop();
});

async function sessionsNamed(name: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1",
    [name],
  );
  return rows[0]?.n ?? -1;
}

describe("relay session settings", () => {
  it("apply to the relay's connection alone", async () => {
    const session = await db.openSession("mh-test-relay", () => undefined, RELAY_SESSION_SETTINGS);
    try {
      const names = Object.keys(RELAY_SESSION_SETTINGS);
      const read = async (q: { query: Db["query"] }): Promise<Record<string, string>> => {
        const { rows } = await q.query<{ name: string; setting: string }>(
          "SELECT name, setting FROM pg_settings WHERE name = ANY($1::text[])",
          [names],
        );
        return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
      };
      // pg_settings shows each in its base unit (seconds, milliseconds), as the constant spells it.
      expect(await read(session)).toEqual(RELAY_SESSION_SETTINGS);
      const other = await read(db);
      expect(other["synchronous_commit"]).toBe("on");
      expect(other["tcp_keepalives_idle"]).not.toBe(RELAY_SESSION_SETTINGS.tcp_keepalives_idle);
    } finally {
      await session.close();
    }
  });

  it("refused by Postgres closes the connection it opened", async () => {
    await expect(db.openSession("mh-test-refused", () => undefined, { mh_no_such_setting: "1" })).rejects.toThrow(
      /mh_no_such_setting/,
    );
    await expect(db.openSession("mh-test-refused", () => undefined, { synchronous_commit: "sometimes" })).rejects.toThrow(
      /synchronous_commit/,
    );
    // A backend ends a moment after its client hangs up.
    await expect.poll(() => sessionsNamed("mh-test-refused")).toBe(0);
  });
});
