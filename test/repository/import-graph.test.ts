/**
 * Keeps each app's import graph a layering: no file imports itself back through others (a cycle),
 * and no two folders of an app import each other both ways. Imports are read with the TypeScript
 * compiler's own scanner (import, import type, export from, import()), relative ones only: other
 * packages are reached by name and lint keeps those to their entry points. Files directly in an
 * app's src/ (main.ts, app.ts, config.ts, ...) are the app's entry and its app-wide settings;
 * each counts as a unit of its own, so the folder rule is about the folders below them, and a
 * cycle through them is still a cycle.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, mkdirSync, writeFileSync, existsSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const APPS = readdirSync(join(ROOT, "apps")).filter((a) => existsSync(join(ROOT, "apps", a, "src")));

type Graph = ReadonlyMap<string, readonly string[]>;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === "gen" || name === "node_modules" ? [] : sources(path);
    return /\.tsx?$/.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Each file of `src` (relative to it) and the files of `src` it imports. */
function importGraph(src: string): Graph {
  const graph = new Map<string, string[]>();
  for (const file of sources(src)) {
    const imports = ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles.map((f) => f.fileName);
    const targets = new Set<string>();
    for (const specifier of imports.filter((s) => s.startsWith("."))) {
      const base = resolve(dirname(file), specifier).replace(/\.js$/, "");
      const target = [`${base}.ts`, `${base}.tsx`, join(base, "index.ts")].find((t) => existsSync(t));
      if (target === undefined) throw new Error(`${relative(src, file)}: cannot resolve ${specifier}`);
      targets.add(relative(src, target));
    }
    graph.set(relative(src, file), [...targets]);
  }
  return graph;
}

/** The strongly connected groups of more than one file (Tarjan), or a file importing itself. */
function cycles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** A file's unit: its folder, or the file itself when it lies directly in src/. */
function unit(file: string): string {
  const folder = dirname(file);
  return folder === "." ? file : folder;
}

/** Pairs of units that import each other both ways, as "a <-> b" (a before b). */
function twoWayPairs(graph: Graph): string[] {
  const edges = new Set<string>();
  for (const [file, targets] of graph) for (const t of targets) if (unit(file) !== unit(t)) edges.add(`${unit(file)} -> ${unit(t)}`);
  const pairs = new Set<string>();
  for (const edge of edges) {
    const [a = "", b = ""] = edge.split(" -> ");
    if (edges.has(`${b} -> ${a}`)) pairs.add(a < b ? `${a} <-> ${b}` : `${b} <-> ${a}`);
  }
  return [...pairs].sort();
}

describe("each app's import graph", () => {
  it("finds the apps", () => {
    expect(APPS).toEqual(expect.arrayContaining(["gateway", "harness", "session-log", "sandbox-broker", "credential-vault-proxy", "cli"]));
  });

  for (const app of APPS) {
    describe(app, () => {
      const graph = importGraph(join(ROOT, "apps", app, "src"));

      it("has no cycle", () => {
        expect(cycles(graph)).toEqual([]);
      });

      it("has no two folders importing each other both ways", () => {
        expect(twoWayPairs(graph)).toEqual([]);
      });
    });
  }
});

describe("the checks themselves", () => {
  it("see a cycle and a two-way pair, through import type and export from too", () => {
    const src = mkdtempSync(join(tmpdir(), "import-graph-"));
    try {
      const write = (file: string, text: string): void => {
        mkdirSync(dirname(join(src, file)), { recursive: true });
        writeFileSync(join(src, file), text);
      };
      write("a/x.ts", 'import type { Y } from "../b/y.js";\nexport type X = Y;\n');
      write("b/y.ts", 'export { z } from "./z.js";\nexport type Y = number;\n');
      write("b/z.ts", 'import { w } from "../a/w.js";\nexport const z = w;\n');
      write("a/w.ts", 'import type { X } from "./x.js";\nexport const w: X = 1;\n');
      write("main.ts", 'import { z } from "./b/y.js";\nexport default z;\n');
      const graph = importGraph(src);
      expect(cycles(graph)).toEqual([["a/w.ts", "a/x.ts", "b/y.ts", "b/z.ts"]]);
      expect(twoWayPairs(graph)).toEqual(["a <-> b"]);
    } finally {
      rmSync(src, { recursive: true, force: true });
    }
  });
});
