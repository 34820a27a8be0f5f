/**
 * Counts that do not depend on the machine's load, for A/B runs on a shared machine: the gRPC
 * calls a service served by method (its Prometheus `rpc.server.call.duration` histogram's
 * counts, MH_METRICS_PORT) and the transactions Postgres committed in one database
 * (pg_stat_database: every statement outside a transaction is one). Read before and after a
 * window; call-counts.ts's perTurn makes them per turn. (call-counter.ts counts what a process
 * sends instead, from inside it.)
 */
import pg from "pg";
import { ADMIN_URL } from "../../support/postgres.js";

/** Calls served by method (the last segment, "AcquireLease"), from a service's `/metrics` text. */
export async function rpcCallCounts(metricsUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(metricsUrl)).text();
  const out: Record<string, number> = {};
  for (const line of text.split("\n")) {
    const m = /^rpc_server_call_duration\w*_count\{([^}]*)\}\s+(\S+)/.exec(line);
    if (m === null) continue;
    const method = /rpc_method="([^"]*)"/.exec(m[1] ?? "")?.[1]?.split("/").pop() ?? "?";
    out[method] = (out[method] ?? 0) + Number(m[2]);
  }
  return out;
}

/** Transactions committed and rolled back in `database` since the server's statistics were reset. */
export async function databaseTransactions(database: string): Promise<number> {
  const c = new pg.Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    // The backends' pending counts reach pg_stat_database within a second; take what is there.
    const { rows } = await c.query<{ n: string }>("SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1", [database]);
    return Number(rows[0]?.n ?? NaN);
  } finally {
    await c.end();
  }
}
