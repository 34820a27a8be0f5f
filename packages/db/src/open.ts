/**
 * Opens the Db a URL names: a PostgreSQL server, or embedded PGlite (in memory or in a directory;
 * see pglite-db.ts for the URL forms and how the services of one process share one instance).
 */
import { MhError, type CodeName } from "@metaharness/errors";
import type { Db } from "./db.js";
import { createPgDb } from "./pg-db.js";
import { createPgliteDb, pgliteTarget } from "./pglite-db.js";

/**
 * A server is asked once before the Db is handed out, so a service that cannot use it fails its
 * start saying which server and why (refused, a certificate that cannot be checked, a wrong
 * password), not with the bare error of whatever query came first.
 */
export async function openDb(
  url: string,
  /** `applicationName`: the service's name, shown in pg_stat_activity for its connections. */
  opts: { poolSize: number; onIdleError: (err: Error) => void; pgOptions?: string; applicationName?: string },
): Promise<Db> {
  const embedded = pgliteTarget(url);
  if (embedded !== undefined) return createPgliteDb(embedded);
  const db = createPgDb(url, opts.poolSize, opts.onIdleError, opts.pgOptions, opts.applicationName);
  try {
    await db.query("SELECT 1");
  } catch (err) {
    await db.end().catch(() => undefined);
    throw unusable(url, err);
  }
  return db;
}

function unusable(url: string, thrown: unknown): MhError {
  // The driver's own error, not the UNAVAILABLE a query's refusal was mapped to (client-errors.ts).
  const err = thrown instanceof MhError && thrown.cause !== undefined ? thrown.cause : thrown;
  // The URL's host, port and database, never its password.
  let where = "the PostgreSQL server";
  try {
    const u = new URL(url);
    where = `PostgreSQL at ${u.hostname}:${u.port === "" ? "5432" : u.port}${u.pathname}`;
  } catch {
    // Not a URL pg would parse either; the cause says more.
  }
  const sqlState = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  const code: CodeName =
    typeof sqlState === "string" && sqlState.startsWith("28") ? "UNAUTHENTICATED" : sqlState === "3D000" ? "NOT_FOUND" : "UNAVAILABLE";
  return new MhError(code, `${where} cannot be used: ${messageOf(err)}`, { cause: err });
}

/** An AggregateError (every address of a name refused) has an empty message: say its first. */
function messageOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err.message !== "") return err.message;
  const first: unknown = err instanceof AggregateError ? err.errors[0] : undefined;
  if (first instanceof Error && first.message !== "") return first.message;
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" ? code : err.name;
}
