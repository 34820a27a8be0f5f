/**
 * What a benchmark hands back and how it is shown: tables of figures, targets checked as
 * PASS/MISS, and one JSON file per run in bench/results/ (git-ignored) for comparing runs.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import type { CpuUse } from "./cpu.js";
import type { Summary } from "./stats.js";

export type Cell = string | number;

export interface Table {
  readonly title: string;
  readonly columns: readonly string[];
  readonly rows: ReadonlyArray<readonly Cell[]>;
}

export interface Check {
  readonly what: string;
  readonly measured: string;
  readonly target: string;
  readonly pass: boolean;
}

export interface BenchReport {
  readonly name: string;
  readonly title: string;
  readonly tables: readonly Table[];
  readonly checks: readonly Check[];
  /** Conditions a reader needs to judge the figures (config, sample counts, caveats). */
  readonly notes: readonly string[];
  /** Machine-readable figures for the JSON file. */
  readonly data: Record<string, unknown>;
}

export interface Bench {
  readonly name: string;
  readonly title: string;
  run(): Promise<BenchReport>;
}

export function ms(x: number): string {
  if (!Number.isFinite(x)) return "-";
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

export function rate(x: number): string {
  return Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "-";
}

export function atMost(what: string, measured: number, limit: number, unit: string): Check {
  return { what, measured: `${ms(measured)} ${unit}`, target: `< ${limit} ${unit}`, pass: measured < limit };
}

export function atLeast(what: string, measured: number, floor: number, unit: string): Check {
  return { what, measured: `${rate(measured)} ${unit}`, target: `>= ${rate(floor)} ${unit}`, pass: measured >= floor };
}

export function exactly(what: string, measured: number, expected: number): Check {
  return { what, measured: String(measured), target: `= ${expected}`, pass: measured === expected };
}

/** The latency columns every latency table shares, in milliseconds. */
export const LATENCY_COLUMNS = ["n", "p50 ms", "p95 ms", "p99 ms", "max ms"] as const;

export function latencyCells(s: Summary): Cell[] {
  return [s.n, ms(s.p50), ms(s.p95), ms(s.p99), ms(s.max)];
}

/** CPU use per measured window, in percent of one core. */
export function cpuTable(title: string, windows: ReadonlyArray<readonly [string, CpuUse]>): Table {
  const p = (x: number): string => (Number.isFinite(x) ? `${Math.round(x)}%` : "-");
  const cores = windows[0]?.[1].cores ?? 0;
  return {
    title: `${title} (percent of one core; the machine has ${cores * 100}%)`,
    columns: ["window", "machine", "bench process", "service process", "postgres", "kafka", "other load"],
    rows: windows.map(([label, u]) => [label, p(u.machine), p(u.self), p(u.service), p(u.postgres), p(u.kafka), p(u.other)]),
  };
}

export function verdict(pass: boolean): string {
  return pass ? "PASS" : "MISS";
}

export function formatTable(table: Table): string {
  const header = table.columns.map(String);
  const body = table.rows.map((row) => row.map(String));
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? "").length)));
  // Labels and text line up on the left, figures (columns whose cells all start like a number) on the right.
  const numeric = header.map((_, i) => i > 0 && body.every((r) => /^([-<>=\d]|$)/.test(r[i] ?? "")));
  const line = (cells: readonly string[]): string =>
    cells.map((c, i) => (numeric[i] === true ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0))).join("  ").trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [`  ${table.title}`, `  ${line(header)}`, `  ${rule}`, ...body.map((r) => `  ${line(r)}`)].join("\n");
}

export function checksTable(title: string, checks: readonly Check[]): Table {
  return {
    title,
    columns: ["target", "measured", "goal", "verdict"],
    rows: checks.map((c) => [c.what, c.measured, c.target, verdict(c.pass)]),
  };
}

export function formatReport(report: BenchReport): string {
  const parts = [`== ${report.name}: ${report.title}`, ...report.tables.map(formatTable)];
  if (report.checks.length > 0) parts.push(formatTable(checksTable("targets", report.checks)));
  if (report.notes.length > 0) parts.push(report.notes.map((n) => `  note: ${n}`).join("\n"));
  return parts.join("\n\n");
}

/** Writes the run to bench/results/<timestamp>.json and bench/results/latest.json; returns the first path. */
export async function writeResults(run: Record<string, unknown>): Promise<string> {
  const dir = new URL("../results/", import.meta.url);
  await mkdir(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const text = `${JSON.stringify(run, null, 2)}\n`;
  const file = new URL(`bench-${stamp}.json`, dir);
  await writeFile(file, text);
  await writeFile(new URL("latest.json", dir), text);
  return file.pathname;
}

/** Runs `bench` alone when its module is the script node started (`npx tsx bench/<file>.ts`). */
export function runIfMain(bench: Bench, moduleUrl: string): void {
  if (process.argv[1] === undefined || moduleUrl !== pathToFileURL(process.argv[1]).href) return;
  bench.run().then(
    (report) => {
      console.log(formatReport(report));
      process.exit(0);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
