/**
 * The services of one process share one PGlite per directory or per in-memory name: handles see
 * the same tables, ending one leaves the others working, and the last one closes the instance.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openDb } from "./open.js";

const opts = { poolSize: 2, onIdleError: () => undefined };
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

// Starting a PGlite takes seconds on a loaded 2-core machine; these tests start several.
describe("PGlite URLs", { timeout: 60_000 }, () => {
  it("shares a named in-memory database until its last handle ends", async () => {
    const a = await openDb("pglite:memory:shared-test", opts);
    const b = await openDb("pglite:memory:shared-test", opts);
    await a.exec("CREATE TABLE t (v int); INSERT INTO t VALUES (1)");
    expect((await b.query<{ v: number }>("SELECT v FROM t")).rows).toEqual([{ v: 1 }]);
    await a.end();
    await a.end(); // idempotent: does not take b's handle away
    expect((await b.query<{ n: number }>("SELECT count(*)::int AS n FROM t")).rows).toEqual([{ n: 1 }]);
    await b.end();
    const c = await openDb("pglite:memory:shared-test", opts);
    await expect(c.query("SELECT v FROM t")).rejects.toThrow(/does not exist/);
    await c.end();
  });

  it("keeps pglite:memory private to each Db", async () => {
    const a = await openDb("pglite:memory", opts);
    const b = await openDb("pglite:memory", opts);
    await a.exec("CREATE TABLE only_a (v int)");
    await expect(b.query("SELECT * FROM only_a")).rejects.toThrow(/does not exist/);
    await Promise.all([a.end(), b.end()]);
  });

  it("opens one instance per directory, however the path is spelled", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mh-pglite-"));
    dirs.push(dir);
    const a = await openDb(`pglite://${dir}`, opts);
    const b = await openDb(`pglite://${dir}/./`, opts);
    await a.exec("CREATE TABLE t (v int); INSERT INTO t VALUES (7)");
    await b.exec("INSERT INTO t VALUES (8)");
    expect((await a.query<{ v: number }>("SELECT v FROM t ORDER BY v")).rows).toEqual([{ v: 7 }, { v: 8 }]);
    await Promise.all([a.end(), b.end()]);
    const again = await openDb(`pglite://${dir}`, opts);
    expect((await again.query<{ n: number }>("SELECT count(*)::int AS n FROM t")).rows).toEqual([{ n: 2 }]);
    await again.end();
  });
});
