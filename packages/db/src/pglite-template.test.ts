/**
 * In-memory PGlites start from a template dumped once into the cache: the first writes it whole
 * (with its hash), later ones load it and are as empty and as separate as a new one; a damaged
 * template is passed over and written again.
 */
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createFromTemplate, templateFile } from "./pglite-template.js";

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

const hashOf = async (file: string): Promise<string> => createHash("sha256").update(await readFile(file)).digest("hex");

// Each start takes seconds on a loaded 2-core machine.
describe("the in-memory template", { timeout: 120_000 }, () => {
  it("is written once, then loaded: empty, separate databases", async () => {
    const cache = await mkdtemp(join(tmpdir(), "mh-pglite-cache-"));
    dirs.push(cache);
    const file = templateFile(cache);
    const first = await createFromTemplate(cache);
    expect((await readFile(`${file}.sha256`, "utf8")).trim()).toBe(await hashOf(file));
    const written = (await stat(file)).mtimeMs;
    await first.exec("CREATE TABLE mine (v int); INSERT INTO mine VALUES (1)");

    const second = await createFromTemplate(cache);
    expect((await stat(file)).mtimeMs).toBe(written);
    expect((await second.query("SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'mine'")).rows).toEqual([{ n: 0 }]);
    await second.exec("CREATE TABLE mine (v int)");
    expect((await first.query("SELECT v FROM mine")).rows).toEqual([{ v: 1 }]);
    await Promise.all([first.close(), second.close()]);
  });

  it("passes over a damaged template and writes it again", async () => {
    const cache = await mkdtemp(join(tmpdir(), "mh-pglite-cache-"));
    dirs.push(cache);
    const file = templateFile(cache);
    await (await createFromTemplate(cache)).close();
    await writeFile(file, "not a tar");
    const db = await createFromTemplate(cache);
    expect((await db.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    expect((await readFile(`${file}.sha256`, "utf8")).trim()).toBe(await hashOf(file));
    expect((await stat(file)).size).toBeGreaterThan(1_000_000);
    await db.close();
  });
});
