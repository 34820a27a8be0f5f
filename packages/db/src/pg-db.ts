/**
 * The Db on a real PostgreSQL server through `pg`: a pool for queries and transactions, and
 * dedicated clients for LISTEN and for sessions that hold advisory locks.
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { clientError } from "./client-errors.js";
import type { Db, DbSession, QueryResult, Queryable } from "./db.js";

function adapt<R>(result: pg.QueryResult): QueryResult<R> {
  return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
}

// Statements with parameters run as named prepared statements: Postgres parses and plans each
// once per connection instead of on every call (the append path runs a handful per event).
const statementNames = new Map<string, string>();
const MAX_NAMED_STATEMENTS = 1000;

function statementName(text: string): string | undefined {
  let name = statementNames.get(text);
  if (name === undefined) {
    // Past the cap (text built from unbounded input would be a bug), run unnamed.
    if (statementNames.size >= MAX_NAMED_STATEMENTS) return undefined;
    name = `mh_${createHash("sha1").update(text).digest("hex").slice(0, 16)}`;
    statementNames.set(text, name);
  }
  return name;
}

function queryable(client: pg.Pool | pg.PoolClient | pg.Client): Queryable {
  return {
    query: async <R>(text: string, params?: readonly unknown[]) => {
      const name = params === undefined || params.length === 0 ? undefined : statementName(text);
      const values = params as unknown[] | undefined;
      try {
        return adapt<R>(await (name === undefined ? client.query(text, values) : client.query({ name, text, values })));
      } catch (err) {
        throw clientError(err);
      }
    },
    // Without parameters pg uses the simple query protocol, which takes several statements.
    exec: async (script: string) => {
      await client.query(script);
    },
  };
}

/**
 * `options`: server settings for every pooled connection, e.g. "-c synchronous_commit=off".
 * `applicationName`: what pg_stat_activity shows for its connections (the service's name), so an
 * operator sees which service holds which; an application_name in the URL wins.
 */
export function createPgDb(
  connectionString: string,
  poolSize: number,
  onIdleError: (err: Error) => void,
  options?: string,
  applicationName?: string,
): Db {
  const named = applicationName === undefined ? {} : { application_name: applicationName };
  const pool = new pg.Pool({ connectionString, max: poolSize, ...named, ...(options === undefined ? {} : { options }) });
  pool.on("error", onIdleError);
  const base = queryable(pool);
  return {
    query: <R>(text: string, params?: readonly unknown[]) => base.query<R>(text, params),
    exec: (script: string) => base.exec(script),
    async transaction(fn) {
      const client = await pool.connect().catch((err: unknown) => {
        throw clientError(err);
      });
      let open = false;
      try {
        await client.query("BEGIN").catch((err: unknown) => {
          throw clientError(err);
        });
        open = true;
        const result = await fn(queryable(client));
        await client.query("COMMIT").catch((err: unknown) => {
          throw clientError(err);
        });
        open = false;
        return result;
      } finally {
        if (open) await client.query("ROLLBACK").catch(() => undefined);
        client.release();
      }
    },
    async openSession(name, onError, settings = {}): Promise<DbSession> {
      // TCP keepalives from 10 s idle, so a session whose server vanished errors out after the
      // system's probes (and its holder reopens it) instead of waiting on its socket for good.
      const client = new pg.Client({ connectionString, application_name: name, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
      client.on("error", onError);
      await client.connect();
      const session = { ...queryable(client), close: () => client.end().catch(() => undefined) };
      const names = Object.keys(settings);
      if (names.length > 0) {
        try {
          await session.query("SELECT set_config(k, v, false) FROM unnest($1::text[], $2::text[]) AS s(k, v)", [
            names,
            names.map((k) => settings[k]),
          ]);
        } catch (err) {
          await session.close();
          throw err;
        }
      }
      return session;
    },
    async listen(channel, onNotify, onLost) {
      const client = new pg.Client({ connectionString, ...named });
      client.on("notification", (msg) => {
        if (msg.channel === channel) onNotify(msg.payload ?? "");
      });
      client.on("error", onLost);
      try {
        await client.connect();
        await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      } catch (err) {
        await client.end().catch(() => undefined);
        throw err;
      }
      return () => client.end().catch(() => undefined);
    },
    end: () => pool.end(),
  };
}
