/**
 * The table of every managed-agents SDK method in docs/api.md is what the SDK, the gateway's
 * routes and the tests say (conformance/methods.ts). MH_WRITE_API_TABLE=1 rewrites it. The
 * methods and routes must be exactly the generated ones; the tests named must each call their
 * method, and every served method must name one (a new test file elsewhere does not make the
 * table wrong, so it is not required to be listed).
 */
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { methodTable, sdkMethods } from "../../conformance/methods.js";
import { startStack, type Stack } from "../../support/gateway.js";

const DOC = new URL("../../../docs/api.md", import.meta.url);
const START = "<!-- sdk-methods:start -->";
const END = "<!-- sdk-methods:end -->";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ scenarios: [], vault: false });
});
afterAll(async () => {
  await stack?.stop();
});

describe("the table of SDK methods in docs/api.md", () => {
  it("lists every managed-agents method of the SDK with its route and tests", async () => {
    expect(sdkMethods().length).toBeGreaterThanOrEqual(98);
    const openapi = (await (await fetch(`${stack.gateway.url}/openapi.json`)).json()) as Parameters<typeof methodTable>[0];
    const table = methodTable(openapi, fileURLToPath(new URL("../../", import.meta.url)));
    const doc = await readFile(DOC, "utf8");
    const start = doc.indexOf(START);
    const end = doc.indexOf(END);
    expect(start, "docs/api.md has the sdk-methods markers").toBeGreaterThan(-1);
    if (process.env["MH_WRITE_API_TABLE"] === "1") {
      await writeFile(DOC, `${doc.slice(0, start + START.length)}\n${table}\n${doc.slice(end)}`);
      return;
    }
    const cells = (text: string): string[][] => text.split("\n").filter((l) => l.startsWith("| `")).map((l) => l.split(" | ").map((c) => c.replace(/^\| |\s\|$/g, "")));
    const documented = cells(doc.slice(start + START.length, end));
    const generated = cells(table);
    const hint = "run the test with MH_WRITE_API_TABLE=1 to regenerate the table";
    expect(documented.map((r) => [r[0], r[1]]), hint).toEqual(generated.map((r) => [r[0], r[1]]));
    const every = cells(methodTable(openapi, fileURLToPath(new URL("../../", import.meta.url)), Number.POSITIVE_INFINITY));
    const byMethod = new Map(every.map((r) => [r[0], new Set([...(r[2] ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1]))]));
    for (const [method, served, tests] of documented) {
      const named = [...(tests ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
      for (const file of named) expect(byMethod.get(method)?.has(file), `${method}: ${file} does not call it (${hint})`).toBe(true);
      if (served?.startsWith("`")) expect(named.length, `${method} is served but names no test (${hint})`).toBeGreaterThan(0);
    }
  });
});
