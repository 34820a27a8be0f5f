/**
 * The browser modules are served as tsc writes them, without a bundler: at run time they may
 * import only each other (`./name.js`). Types from packages are fine (`import type` is erased);
 * a value import of a package would break the page in the browser only, so it fails here.
 */
import { readdir, readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";

const DIR = new URL("./browser/", import.meta.url);
const IMPORT = /^\s*(import|export)\s+(?!type\b)[^;]*?\bfrom\s+["']([^"']+)["']/gm;
const SIDE_EFFECT_IMPORT = /^\s*import\s+["']([^"']+)["']/gm;

describe("the browser modules", () => {
  it("import at run time only each other", async () => {
    const files = (await readdir(DIR)).filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"));
    expect(files).toContain("app.ts");
    for (const file of files) {
      const source = await readFile(new URL(file, DIR), "utf8");
      const specifiers = [...source.matchAll(IMPORT)].map((m) => m[2]).concat([...source.matchAll(SIDE_EFFECT_IMPORT)].map((m) => m[1]));
      for (const specifier of specifiers) expect(`${file}: ${specifier}`).toMatch(/: \.\/[a-z-]+\.js$/);
    }
  });
});
