/**
 * Keyset pagination over (created_at, id), both written by the gateway, so a page costs one
 * index range scan however deep it is, and rows created meanwhile neither shift nor repeat
 * pages. Supports both directions for the SDK's BidirectionalPageCursor.
 */
import type { Queryable } from "@metaharness/db";
import type { Cursor, TimeIdPosition } from "./pagination.js";

export type Order = "asc" | "desc";

export interface KeysetQuery {
  /** `SELECT <columns> FROM <from>`. */
  readonly columns: string;
  readonly from: string;
  readonly idColumn: string;
  /** The creation time column, qualified when `from` joins tables. */
  readonly createdColumn: string;
  /** Conditions joined with AND, using $1..$n of `params`. */
  readonly where: readonly string[];
  readonly params: readonly unknown[];
  readonly order: Order;
  readonly limit: number;
  readonly cursor: Cursor<TimeIdPosition> | undefined;
}

export interface KeysetPage<R> {
  /** In display order. */
  readonly rows: R[];
  readonly next: TimeIdPosition | undefined;
  readonly prev: TimeIdPosition | undefined;
}

export async function keysetPage<R extends { created_at: Date }>(
  db: Queryable,
  q: KeysetQuery,
  idOf: (row: R) => string,
): Promise<KeysetPage<R>> {
  const backward = q.cursor?.direction === "prev";
  const scan: Order = backward ? (q.order === "asc" ? "desc" : "asc") : q.order;
  const where = [...q.where];
  const params = [...q.params];
  if (q.cursor !== undefined) {
    params.push(new Date(q.cursor.position[0]), q.cursor.position[1]);
    where.push(`(${q.createdColumn}, ${q.idColumn}) ${scan === "asc" ? ">" : "<"} ($${params.length - 1}, $${params.length})`);
  }
  params.push(q.limit + 1);
  const dir = scan === "asc" ? "ASC" : "DESC";
  const { rows } = await db.query<R>(
    `SELECT ${q.columns} FROM ${q.from}
      ${where.length === 0 ? "" : `WHERE ${where.join(" AND ")}`}
      ORDER BY ${q.createdColumn} ${dir}, ${q.idColumn} ${dir}
      LIMIT $${params.length}`,
    params,
  );
  const more = rows.length > q.limit;
  const page = rows.slice(0, q.limit);
  if (backward) page.reverse();
  const position = (row: R | undefined): TimeIdPosition | undefined =>
    row === undefined ? undefined : [row.created_at.toISOString(), idOf(row)];
  const first = position(page[0]);
  const last = position(page[page.length - 1]);
  return backward
    ? { rows: page, next: last, prev: more ? first : undefined }
    : { rows: page, next: more ? last : undefined, prev: q.cursor === undefined ? undefined : first };
}
