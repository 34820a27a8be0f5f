/**
 * WatchEvents: the backlog after a seq, then live events, with no gap and no duplicate at the
 * join. The watcher subscribes to the hub before its first read, keeps a cursor (the highest seq
 * it has examined) and only ever reads after it, so every event is sent exactly once however the
 * pokes interleave with the reads. A slow periodic re-read covers a missed NOTIFY.
 */
import type { Db } from "../db/db.js";
import { SessionStatus, type Event } from "@metaharness/proto";
import type { AppendHub } from "./hub.js";
import { readSlice } from "../store/read.js";

const WATCH_BATCH = 500;

export interface WatchRequest {
  readonly sessionId: string;
  readonly afterSeq: number;
  readonly types: readonly string[];
}

export interface WatchDeps {
  readonly db: Db;
  readonly hub: AppendHub;
  /** Re-read this often even without a poke. */
  readonly recheckMs: number;
}

/** Resolves when the session is terminated and fully sent, or when `signal` aborts. */
export async function watchEvents(
  deps: WatchDeps,
  req: WatchRequest,
  send: (event: Event) => Promise<void>,
  signal: AbortSignal,
): Promise<void> {
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
        await send(event);
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
  }
}
