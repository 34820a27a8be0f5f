/**
 * The database behind the session log, as the few operations it needs. Two adapters implement it
 * with the same SQL and migrations: real PostgreSQL through `pg` (pg-db.ts) and embedded Postgres
 * through PGlite (pglite-db.ts) for the single-process default. Nothing else in the service knows
 * which one it talks to.
 */
export interface QueryResult<R> {
  readonly rows: R[];
  readonly rowCount: number;
}

export interface Queryable {
  query<R = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(script: string): Promise<void>;
}

/** Postgres parameters by name, e.g. { synchronous_commit: "off" }. */
export type SessionSettings = Readonly<Record<string, string>>;

/** One connection kept for session-level state (advisory locks), e.g. by the outbox relay. */
export interface DbSession extends Queryable {
  close(): Promise<void>;
}

export interface Db extends Queryable {
  /** Runs `fn` in one transaction: committed if it resolves, rolled back if it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * A dedicated connection. `name` shows in pg_stat_activity.application_name, where relays count
   * each other; `settings` are Postgres parameters set for this connection alone (set_config).
   * The embedded store has a single connection shared by everything, so there they do not apply.
   */
  openSession(name: string, onError: (err: Error) => void, settings?: SessionSettings): Promise<DbSession>;
  /**
   * Calls `onNotify` with each NOTIFY payload on `channel`; `onLost` when the listening connection
   * fails (the caller reconnects by listening again). Resolves to the function that stops it.
   */
  listen(
    channel: string,
    onNotify: (payload: string) => void,
    onLost: (err: Error) => void,
  ): Promise<() => Promise<void>>;
  end(): Promise<void>;
}
