/**
 * What Principals knows without a query (`kept`, which a request's gate answers synchronously
 * from) agrees with `resolve`: a key it looked up, found or not, until its copy expires; never a
 * sessions token; a key longer than any credential refused outright.
 */
import type { QueryResult, Queryable } from "@metaharness/db";
import { describe, expect, it } from "vitest";
import { Principals } from "./principals.js";
import { MAX_KEY_CHARS, WORK_TOKEN_PREFIX } from "./key-prefixes.js";

/** A database that knows one API key's tenant (by hash, as the table holds it) and counts its statements. */
function database(tenantOf: (hash: string) => string | undefined): Queryable & { statements: number } {
  const db = {
    statements: 0,
    query<R>(_text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      db.statements += 1;
      const tenant = tenantOf(String(params?.[0]));
      const rows = (tenant === undefined ? [] : [{ tenant }]) as R[];
      return Promise.resolve({ rows, rowCount: rows.length });
    },
    exec: () => Promise.resolve(),
  };
  return db;
}

describe("Principals.kept", () => {
  it("knows a key once resolve looked it up, found or not, with no statement of its own", async () => {
    const db = database((hash) => (hash.length === 64 ? "acme" : undefined));
    const principals = new Principals(db, 60_000);
    expect(principals.kept("sk-one")).toBeUndefined();
    expect(await principals.resolve("sk-one")).toEqual({ kind: "api_key", tenant: "acme" });
    expect(principals.kept("sk-one")).toEqual({ principal: { kind: "api_key", tenant: "acme" }, until: expect.any(Number) as number });
    expect(db.statements).toBe(1);

    const none = new Principals(database(() => undefined), 60_000);
    expect(await none.resolve("sk-unknown")).toBeUndefined();
    expect(none.kept("sk-unknown")?.principal).toBeUndefined();
    expect(none.kept("sk-unknown")).not.toBeUndefined();
  });

  it("keeps nothing with no time to keep it, and never a sessions token", async () => {
    const db = database(() => "acme");
    const uncached = new Principals(db, 0);
    await uncached.resolve("sk-one");
    expect(uncached.kept("sk-one")).toBeUndefined();
    expect(new Principals(db, 60_000).kept(`${WORK_TOKEN_PREFIX}abc`)).toBeUndefined();
  });

  it("refuses a key longer than any credential without a statement", async () => {
    const db = database(() => "acme");
    const principals = new Principals(db, 60_000);
    const long = "k".repeat(MAX_KEY_CHARS + 1);
    expect(principals.kept(long)).toEqual({ principal: undefined });
    expect(await principals.resolve(long)).toBeUndefined();
    expect(db.statements).toBe(0);
  });
});
