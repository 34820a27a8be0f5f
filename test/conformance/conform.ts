/**
 * The conformance check: every response and every event the integration suite's SDK clients
 * read (recorded by recorder.ts into MH_CONFORMANCE_DIR), held against the type the official SDK
 * declares for it (sdk-types.ts). The route of each record is found in the gateway's
 * /openapi.json, which names the SDK type each route returns; routes of our own (marked
 * x-meta-harness-extension), error answers and responses read with our extensions asked for are
 * not the SDK's to judge. Prints each distinct violation with the test file that met it first,
 * and closes with `conformance: N passed, M failed` (records); exits 1 on any violation or when
 * nothing was recorded.
 *
 *   npx tsx conformance/conform.ts [dir]     (from test/; dir defaults to MH_CONFORMANCE_DIR)
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { RecordLine } from "./recorder.js";
import { SdkTypes } from "./sdk-types.js";

interface Operation {
  readonly method: string;
  readonly pattern: RegExp;
  readonly template: string;
  /** The SDK type of the answer, or of each SSE message's data. */
  readonly response: string;
  readonly stream: boolean;
  readonly ours: boolean;
}

type OpenApi = { paths: Record<string, Record<string, { responses?: Record<string, { description?: string; content?: Record<string, unknown> }>; "x-meta-harness-extension"?: boolean }>> };

export function operationsOf(doc: OpenApi): Operation[] {
  const out: Operation[] = [];
  for (const [template, methods] of Object.entries(doc.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{\w+\}/g, "[^/]+")}$`);
    for (const [method, op] of Object.entries(methods)) {
      const ok = op.responses?.["200"];
      out.push({
        method: method.toUpperCase(),
        pattern,
        template,
        response: ok?.description ?? "",
        stream: ok?.content?.["text/event-stream"] !== undefined,
        ours: op["x-meta-harness-extension"] === true,
      });
    }
  }
  return out;
}

/** The route of a request: among the templates that match, the one with the fewest parameters (`/work/stats` before `/work/{work_id}`). */
export function routeOf(ops: readonly Operation[], method: string, path: string): Operation | undefined {
  const params = (o: Operation): number => (o.template.match(/\{/g) ?? []).length;
  return ops.filter((o) => o.method === method && o.pattern.test(path)).sort((a, b) => params(a) - params(b))[0];
}

const PAGE = /^(?:Bidirectional)?PageCursor<(\w+)>$/;
const NULLABLE = /^(\w+) \| null$/;
const PAGE_KEYS = new Set(["data", "next_page", "prev_page"]);

/** The violations of one record ("where: what"), or undefined when it is not the SDK's to judge. */
export function judge(types: SdkTypes, ops: readonly Operation[], record: RecordLine): string[] | undefined {
  if (record.status >= 300 || record.extensions === true) return undefined;
  const op = routeOf(ops, record.method, record.path);
  if (op === undefined || op.ours) return undefined;
  if (record.sse !== undefined) {
    if (record.sse.event === "error") return undefined;
    const data = record.sse.data as { type?: unknown };
    const named = data.type === record.sse.event ? [] : [`event: ${record.sse.event} but data.type ${JSON.stringify(data.type)}`];
    return [...named, ...types.check(data, op.response)];
  }
  const page = PAGE.exec(op.response);
  if (page === null) {
    const nullable = NULLABLE.exec(op.response);
    if (nullable !== null) return record.body === null ? [] : types.check(record.body, nullable[1]!);
    // A route whose answer the SDK does not type (a health check): noted once, not judged.
    return types.has(op.response) ? types.check(record.body, op.response) : undefined;
  }
  const body = record.body as Record<string, unknown>;
  const out = Object.keys(body).filter((k) => !PAGE_KEYS.has(k)).map((k) => `$.${k}: not a page's field`);
  if (!Array.isArray(body["data"])) return [...out, "$.data: not an array"];
  const next = body["next_page"];
  if (next !== null && typeof next !== "string") out.push("$.next_page: neither a string nor null");
  body["data"].forEach((item, i) => out.push(...types.check(item, page[1]!, `$.data[${i}]`)));
  return out;
}

function main(): number {
  const dir = process.argv[2] ?? process.env["MH_CONFORMANCE_DIR"];
  if (dir === undefined || dir === "") throw new Error("usage: conform.ts <dir> (or MH_CONFORMANCE_DIR)");
  const ops = operationsOf(JSON.parse(readFileSync(join(dir, "openapi.json"), "utf8")) as OpenApi);
  const types = new SdkTypes();
  const unknownTypes = [...new Set(ops.filter((o) => !o.ours && o.response !== "").map((o) => PAGE.exec(o.response)?.[1] ?? NULLABLE.exec(o.response)?.[1] ?? o.response))].filter((t) => !types.has(t));
  let passed = 0;
  let failed = 0;
  const seen = new Map<string, { file: string; count: number }>();
  for (const name of readdirSync(dir).filter((f) => f.endsWith(".jsonl")).sort()) {
    for (const line of readFileSync(join(dir, name), "utf8").split("\n")) {
      if (line.trim() === "") continue;
      const record = JSON.parse(line) as RecordLine;
      const violations = judge(types, ops, record);
      if (violations === undefined) continue;
      if (violations.length === 0) passed += 1;
      else failed += 1;
      for (const v of violations) {
        // One line per route and field, array indexes folded.
        const key = `${record.method} ${routeOf(ops, record.method, record.path)?.template ?? record.path}${record.sse === undefined ? "" : ` (${record.sse.event})`}: ${v.replace(/\[\d+\]/g, "[]")}`;
        const prior = seen.get(key);
        seen.set(key, { file: prior?.file ?? record.file ?? "?", count: (prior?.count ?? 0) + 1 });
      }
    }
  }
  for (const [key, { file, count }] of seen) console.log(`violation: ${key}  [${count}x, first in ${file}]`);
  for (const t of unknownTypes) console.log(`note: the gateway names a response type the SDK does not declare: ${t}`);
  console.log(`conformance: ${passed} passed, ${failed} failed`);
  return failed === 0 && passed > 0 ? 0 : 1;
}

if (process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href) process.exit(main());
