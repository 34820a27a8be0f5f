/**
 * WatchEvents: the backlog after a seq, then live events, with no gap and no duplicate at the
 * join. The watcher subscribes to the hub before its first read, keeps a cursor (the highest seq
 * it has examined) and only ever reads after it, so every event is sent exactly once however the
 * pokes interleave with the reads. Events appended through this instance come with their poke
 * (hub.ts) and are sent without a read when they follow the cursor; anything else is read. A
 * slow periodic re-read covers a missed NOTIFY. Events go out as stored (stored-wire.ts). Of
 * those that come with their poke, a lease holder's own (except_lease_epoch) are passed over: the
 * harness following the session it drives has them from its append's answer. A watch that ends
 * with its lease (end_with_lease) returns once what this instance learns says that lease is over
 * (lease-news.ts), or at the time it was last set to run out, which bounds its waits.
 */
import { MhError } from "@metaharness/errors";
import type { Db } from "@metaharness/db";
import { Event, SessionStatus, type EventDelta, type WatchEventsResponse } from "@metaharness/proto";
import type { DeltaHub } from "./deltas.js";
import { RECHECK, type AppendHub } from "./hub.js";
import { leaseAfter, type LeaseNews } from "./lease-news.js";
import { IdleWait, type WatchLease } from "./idle-wait.js";
import { readStoredSlice } from "../store/read.js";
import { sessionHead } from "../store/sessions.js";
import { storedWatchEventResponse } from "../stored-wire.js";
import { watchSubscribers } from "../metrics.js";

const WATCH_BATCH = 500;
/** Writes a watcher may have waiting before it drops deltas (a client that stopped reading). */
const MAX_QUEUED = 1000;

export interface WatchRequest {
  readonly sessionId: string;
  readonly afterSeq: number;
  readonly types: readonly string[];
  readonly includeDeltas: boolean;
  /** Deltas delivered together go out as one message (WatchEventsRequest.batch_deltas). */
  readonly batchDeltas: boolean;
  /** Start at the session's head, whatever afterSeq says (WatchEventsRequest.from_head). */
  readonly fromHead: boolean;
  /** Events appended here under this lease epoch are not sent (WatchEventsRequest.except_lease_epoch): its holder has them. */
  readonly exceptLeaseEpoch?: number | undefined;
  /** Ends (OK) once the lease of exceptLeaseEpoch is over (WatchEventsRequest.end_with_lease). */
  readonly endWithLease?: boolean | undefined;
}

export interface WatchDeps {
  readonly db: Db;
  readonly hub: AppendHub;
  readonly deltas: DeltaHub;
  /** What this instance learns of leases, for a watch that ends with its lease. */
  readonly leases: LeaseNews;
  /** Re-read this often even without a poke. */
  readonly recheckMs: number;
}

/** The messages of deltas delivered together: one (`deltas`) to a watch that batches them, else one each (`delta`). */
function deltaItems(deltas: readonly EventDelta[], batch: boolean): WatchEventsResponse[] {
  return batch ? [{ event: undefined, delta: undefined, deltas: [...deltas] }] : deltas.map((delta) => ({ event: undefined, delta, deltas: [] }));
}

/** Resolves when the session is terminated and fully sent, when the watch's lease is over (endWithLease), or when `signal` aborts. */
export async function watchEvents(
  deps: WatchDeps,
  req: WatchRequest,
  write: (item: WatchEventsResponse) => Promise<void> | undefined,
  signal: AbortSignal,
): Promise<void> {
  // Events (from the loop below) and deltas (pushed by the hub) share one stream: serialize writes.
  let tail: Promise<void> = Promise.resolve();
  let queued = 0;
  /**
   * Undefined when written at once. With no write waiting (every earlier one done) it writes now,
   * in order, and a write the transport takes at once makes no promise: that is every event of a
   * watch whose client keeps reading (5-6 promises an event were a watch's largest share).
   */
  const send = (item: WatchEventsResponse): Promise<void> | undefined => {
    if (queued === 0) {
      let waiting: Promise<void> | undefined;
      try {
        waiting = write(item);
      } catch (err) {
        // As a chained write's throw would: a rejection, not a throw into the hub's delivery.
        waiting = Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
      if (waiting === undefined) return undefined;
      queued += 1;
      tail = waiting.finally(() => (queued -= 1));
      return tail;
    }
    queued += 1;
    tail = tail.then(() => write(item)).finally(() => (queued -= 1));
    return tail;
  };
  let pokedSeq = 0;
  /** The highest seq examined (sent, or filtered out). */
  let cursor = req.afterSeq;
  /**
   * Deltas that arrived while events appended before them (poked, not yet read) were still to be
   * sent: they go out right after those events, so a watcher sees a model request's start before
   * its tokens (the harness publishes a request's deltas only once its start is appended here).
   */
  const held: WatchEventsResponse[] = [];
  /** A from_head watch sends nothing before its first message (`started_after`): deltas wait. */
  let started = !req.fromHead;
  const stopDeltas = req.includeDeltas
    ? deps.deltas.subscribe(req.sessionId, (deltas) => {
        for (const item of deltaItems(deltas, req.batchDeltas)) {
          // Deltas are best effort: one that cannot be written (client gone) is dropped, and so
          // are those arriving while a client that stopped reading has MAX_QUEUED writes waiting.
          if (queued + held.length >= MAX_QUEUED) return;
          if (!started || pokedSeq > cursor) held.push(item);
          else send(item)?.catch(() => undefined);
        }
      })
    : undefined;
  const release = (): void => {
    for (const item of held.splice(0)) send(item)?.catch(() => undefined);
  };
  /** A re-read was asked for (RECHECK) since the last read began. */
  let recheck = false;
  /** Events appended here after the cursor, from the pokes, in seq order with no gap: sent without a read when they follow it. */
  let pushed: Array<{ event: Event; body: Uint8Array; own: boolean }> = [];
  /** The lease the watch ends with: over, or when it runs out as last learnt here (performance.now()), or not known yet. */
  let lease: WatchLease;
  const over = (): boolean => lease === "over";
  const idle = new IdleWait(deps.recheckMs, signal, {
    get: () => lease,
    over: () => {
      lease = "over";
    },
  });
  const stopLease =
    req.endWithLease === true && req.exceptLeaseEpoch !== undefined
      ? deps.leases.subscribe(req.sessionId, (fact) => {
          const after = leaseAfter(req.exceptLeaseEpoch as number, fact, performance.now());
          if (after === undefined) return;
          lease = after;
          // An idle wait bounded by the time before re-arms; one past the end ends.
          idle.wake("lease");
        })
      : undefined;
  const unsubscribe = deps.hub.subscribe(req.sessionId, (_id, lastSeq, appended) => {
    if (lastSeq === RECHECK) recheck = true;
    else pokedSeq = Math.max(pokedSeq, lastSeq);
    if (appended !== undefined) {
      const first = appended.events[0]?.seq ?? 0;
      const last = pushed[pushed.length - 1]?.event.seq;
      // Not joined to what is held: those before it will be read, and these with them. Bounded
      // like a read: a watcher whose client stopped reading reads them back later instead.
      if (last !== undefined && first !== last + 1) pushed = [];
      const own = req.exceptLeaseEpoch !== undefined && appended.leaseEpoch === req.exceptLeaseEpoch;
      appended.events.forEach((event, i) => pushed.push({ event, body: appended.bodies[i] as Uint8Array, own }));
      if (pushed.length > WATCH_BATCH) pushed = [];
    }
    idle.wake("poke");
  });
  const onAbort = (): void => idle.wake("poke");
  signal.addEventListener("abort", onAbort);
  watchSubscribers.add(1);
  const types = new Set(req.types);
  // Known to start at the head: no first read (the position is reached, the session exists and
  // is not terminated); a poke from now on is heard as after a read.
  let afterSeq = req.afterSeq;
  let atHead = !req.fromHead && deps.hub.heads.lastSeq(req.sessionId) === afterSeq;
  let first = !atHead;
  try {
    if (req.fromHead) {
      // Where the head is now: known here, or read (after subscribing, so an append from here on
      // is heard, as after the loop's own reads).
      const known = deps.hub.heads.lastSeq(req.sessionId);
      const head = known === undefined ? await sessionHead(deps.db, req.sessionId) : { lastSeq: known, terminated: false };
      // Said first, now that every append after it is heard: the watcher may count on what follows.
      await send({ event: undefined, delta: undefined, deltas: [], startedAfter: head.lastSeq });
      started = true;
      if (head.terminated) return;
      if (known === undefined && !recheck) deps.hub.heads.learn(req.sessionId, head.lastSeq, pokedSeq);
      afterSeq = head.lastSeq;
      cursor = afterSeq;
      atHead = true;
      first = false;
    }
    while (!signal.aborted && !over()) {
      if (atHead) {
        atHead = false;
        if (pokedSeq <= cursor && !recheck) {
          release();
          await idle.wait();
          continue;
        }
      }
      pushed = pushed.filter((p) => p.event.seq > cursor);
      if (!first && !recheck && pushed[0]?.event.seq === cursor + 1) {
        // What this instance appended, as it stored it: no read. A terminating event is read
        // again below (the read path sees the status and ends the watch).
        const take = pushed;
        pushed = [];
        let terminated = false;
        for (const { event, body, own } of take) {
          if (signal.aborted || over()) return;
          if (!own && (types.size === 0 || types.has(event.type))) {
            const waiting = send(storedWatchEventResponse(event, body));
            if (waiting !== undefined) await waiting;
          }
          cursor = event.seq;
          terminated ||= event.type === "session.status_terminated";
        }
        if (pokedSeq <= cursor) release();
        if (!terminated) {
          if (pokedSeq > cursor || recheck) continue;
          await idle.wait();
          continue;
        }
      }
      recheck = false; // this read covers it
      const slice = await readStoredSlice(deps.db, {
        sessionId: req.sessionId,
        direction: "after",
        position: cursor,
        limit: WATCH_BATCH,
        types: req.types,
      });
      if (first && afterSeq > slice.lastSeq) {
        // Seqs are dense: no event will ever be numbered at or below a seq the log already
        // passed, so a position it has not reached is a client's mistake, not a wait.
        throw new MhError("OUT_OF_RANGE", `after_seq ${afterSeq} is beyond session ${req.sessionId}'s last event (${slice.lastSeq})`, {
          field: "after_seq",
        });
      }
      first = false;
      for (const body of slice.bodies) {
        if (signal.aborted || over()) return;
        const event = Event.decode(body);
        const waiting = send(storedWatchEventResponse(event, body));
        if (waiting !== undefined) await waiting;
        cursor = event.seq;
      }
      if (slice.hasMore) continue;
      // Everything up to lastSeq was examined in that snapshot (filtered-out types included).
      cursor = Math.max(cursor, slice.lastSeq);
      if (slice.status !== SessionStatus.SESSION_STATUS_TERMINATED && !recheck) deps.hub.heads.learn(req.sessionId, slice.lastSeq, pokedSeq);
      if (pokedSeq <= cursor) release();
      if (slice.status === SessionStatus.SESSION_STATUS_TERMINATED) return;
      if (pokedSeq > cursor || recheck) continue;
      await idle.wait();
    }
  } finally {
    watchSubscribers.add(-1);
    idle.stop();
    signal.removeEventListener("abort", onAbort);
    unsubscribe();
    stopLease?.();
    stopDeltas?.();
    await tail.catch(() => undefined);
  }
}
