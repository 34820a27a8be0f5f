/**
 * EXPLAIN (ANALYZE, BUFFERS) of a statement, boiled down to one line a reader can check: the
 * joins, sorts and scans of the plan in depth-first order with their actual rows, the buffers the
 * statement touched and its planning and execution times.
 */
import type { Pool } from "pg";

export interface PlanSummary {
  /** e.g. "Limit > Nested Loop > Index Scan using outbox_pkey on outbox (500) > ...". */
  readonly shape: string;
  /** Relations read by a sequential scan (a cost that grows with the table). */
  readonly seqScans: readonly string[];
  /** Shared buffers the statement touched (hit + read). */
  readonly buffers: number;
  readonly planningMs: number;
  readonly executionMs: number;
}

interface PlanNode {
  readonly "Node Type": string;
  readonly "Relation Name"?: string;
  readonly "Index Name"?: string;
  readonly "Actual Rows"?: number;
  readonly "Actual Loops"?: number;
  readonly "Shared Hit Blocks"?: number;
  readonly "Shared Read Blocks"?: number;
  readonly Plans?: readonly PlanNode[];
}

interface ExplainRow {
  "QUERY PLAN": Array<{ Plan: PlanNode; "Planning Time": number; "Execution Time": number }>;
}

const SHOWN = /Join|Nested Loop|Sort|Limit|Scan|Aggregate|WindowAgg|Gather/;

function flatten(node: PlanNode, out: PlanNode[]): PlanNode[] {
  if (SHOWN.test(node["Node Type"])) out.push(node);
  for (const child of node.Plans ?? []) flatten(child, out);
  return out;
}

function label(n: PlanNode): string {
  const index = n["Index Name"] === undefined ? "" : ` using ${n["Index Name"]}`;
  const relation = n["Relation Name"] === undefined ? "" : ` on ${n["Relation Name"]}`;
  const rows = (n["Actual Rows"] ?? 0) * (n["Actual Loops"] ?? 1);
  return `${n["Node Type"]}${index}${relation} (${rows})`;
}

export async function explain(pool: Pool, sql: string, params: readonly unknown[]): Promise<PlanSummary> {
  const { rows } = await pool.query<ExplainRow>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, [...params]);
  const result = rows[0]?.["QUERY PLAN"][0];
  if (result === undefined) throw new Error("EXPLAIN returned no plan");
  const nodes = flatten(result.Plan, []);
  return {
    shape: nodes.map(label).join(" > "),
    seqScans: nodes.filter((n) => n["Node Type"] === "Seq Scan").map((n) => n["Relation Name"] ?? "?"),
    buffers: (result.Plan["Shared Hit Blocks"] ?? 0) + (result.Plan["Shared Read Blocks"] ?? 0),
    planningMs: result["Planning Time"],
    executionMs: result["Execution Time"],
  };
}
