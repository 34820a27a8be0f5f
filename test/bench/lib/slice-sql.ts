/**
 * Our slice without gRPC: the service's own read (store/read.ts) on the service's own kind of
 * connection pool (@metaharness/db: named prepared statements), run from the bench process to
 * split a GetEvents latency into database time and RPC time; its statement is EXPLAINed to show
 * the plan is a bounded index range scan.
 */
import { createPgDb, type Db } from "@metaharness/db";
import { Event } from "@metaharness/proto";
import { MAX_SLICE_BYTES, readStoredSlice, sliceStatement } from "@metaharness/session-log";

export const SLICE_SQL = sliceStatement("after", false);

/** SLICE_SQL's parameters for `limit` events after `afterSeq` (limit + 1 rows, to learn has_more). */
export function sliceParams(sessionId: string, afterSeq: number, limit: number): unknown[] {
  return [sessionId, afterSeq, limit + 1, MAX_SLICE_BYTES];
}

/** A pool of `size` connections as the service opens them. */
export function serviceDb(url: string, size: number): Db {
  return createPgDb(url, size, (err) => console.error(`bench: an idle connection failed: ${err.message}`));
}

/** The slice as the service reads it, decoded. */
export async function sqlSlice(db: Db, sessionId: string, afterSeq: number, limit: number): Promise<Event[]> {
  const slice = await readStoredSlice(db, { sessionId, direction: "after", position: afterSeq, limit, types: [] });
  return slice.bodies.map((b) => Event.decode(b));
}
