/**
 * WatchEvents: the backlog after a seq, then live events, with no gap and no duplicate at the
 * join. The watcher subscribes to the hub before its first read, keeps a cursor (the highest seq
 * it has examined) and only ever reads after it, so every event is sent exactly once however the
 * pokes interleave with the reads. A slow periodic re-read covers a missed NOTIFY.
 */
import type { Db } from "@metaharness/db";
import { SessionStatus, type WatchEventsResponse } from "@metaharness/proto";
import type { DeltaHub } from "./deltas.js";
import type { AppendHub } from "./hub.js";
import { readSlice } from "../store/read.js";

const WATCH_BATCH = 500;

export interface WatchRequest {
  readonly sessionId: string;
  readonly afterSeq: number;
  readonly types: readonly string[];
  readonly includeDeltas: boolean;
}

export interface WatchDeps {
  readonly db: Db;
  readonly hub: AppendHub;
  readonly deltas: DeltaHub;
  /** Re-read this often even without a poke. */
  readonly recheckMs: number;
}

/** Resolves when the session is terminated and fully sent, or when `signal` aborts. */
export async function watchEvents(
  deps: WatchDeps,
  req: WatchRequest,
  write: (item: WatchEventsResponse) => Promise<void>,
  signal: AbortSignal,
): Promise<void> {
  // Events (from the loop below) and deltas (pushed by the hub) share one stream: serialize writes.
  let tail: Promise<void> = Promise.resolve();
  const send = (item: WatchEventsResponse): Promise<void> => {
    tail = tail.then(() => write(item));
    return tail;
  };
  const stopDeltas = req.includeDeltas
    ? deps.deltas.subscribe(req.sessionId, (delta) => {
        // A delta that cannot be written (client gone) is dropped: deltas are best effort.
        send({ event: undefined, delta }).catch(() => undefined);
      })
    : undefined;
  let pokedSeq = 0;
  let wake: (() => void) | undefined;
  const unsubscribe = deps.hub.subscribe(req.sessionId, (_id, lastSeq) => {
    pokedSeq = Math.max(pokedSeq, lastSeq);
    wake?.();
  });
  const onAbort = (): void => wake?.();
  signal.addEventListener("abort", onAbort);
  try {
    let cursor = req.afterSeq;
    while (!signal.aborted) {
      const slice = await readSlice(deps.db, {
        sessionId: req.sessionId,
        direction: "after",
        position: cursor,
        limit: WATCH_BATCH,
        types: req.types,
      });
      for (const event of slice.events) {
        if (signal.aborted) return;
        await send({ event, delta: undefined });
        cursor = event.seq;
      }
      if (slice.hasMore) continue;
      // Everything up to lastSeq was examined in that snapshot (filtered-out types included).
      cursor = Math.max(cursor, slice.lastSeq);
      if (slice.status === SessionStatus.SESSION_STATUS_TERMINATED) return;
      if (pokedSeq > cursor) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, deps.recheckMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    unsubscribe();
    stopDeltas?.();
    await tail.catch(() => undefined);
  }
}
