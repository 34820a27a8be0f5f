/**
 * @metaharness/db: what our services need of a database, on a PostgreSQL server or embedded
 * PGlite with the same SQL, chosen by URL (postgres://..., pglite:memory, pglite:memory:<name>, pglite:///dir).
 */
export type { Db, DbSession, QueryResult, Queryable, SessionSettings } from "./db.js";
export { createPgDb } from "./pg-db.js";
export { createPgliteDb, pgliteTarget, type PgliteTarget } from "./pglite-db.js";
export { openDb } from "./open.js";
export { migrate, loadMigrations, type Migration } from "./migrate.js";
export { ResilientListener } from "./listener.js";
export { NotifyBatcher, NotifyPayloads } from "./notify-batcher.js";
export { WriteBatcher, type WriteBatcherOptions, type WriteOutcome } from "./write-batcher.js";
