/**
 * The append hub: tells watchers and the outbox relay that a session's log grew. Appends in this
 * process poke it directly (no round trip) once committed; other instances hear of them through
 * the NOTIFY that each batch of appends sends with its commit (mh_append, with this hub's
 * payload prefix; none while an instance is alone, peers.ts), and their appends arrive here
 * through LISTEN. A poke says "read again from
 * where you are"; a poke of an append made here also carries the events it stored, so a watcher
 * whose cursor is just before them sends them without reading them back (a Postgres read per
 * watcher per append, most of a watched turn's reads). Readers fetch from the log whenever what a
 * poke carries does not follow their cursor, so a lost or doubled poke costs latency, never
 * correctness. The hub also keeps what this instance knows of sessions' heads (heads.ts), which
 * the pokes carry forward.
 */
import type { Event } from "@metaharness/proto";
import type { Logger } from "@metaharness/service-kit/logging";
import type { Db } from "@metaharness/db";
import { NotifyPayloads, ResilientListener } from "@metaharness/db";
import { SessionHeads } from "./heads.js";

/** The channel appends are announced on: items "<session_id>:<last_seq>" (see NotifyPayloads). */
export const EVENTS_CHANNEL = "mh_events";

/** Events one append stored, in seq order and with no gap, the last at the poke's lastSeq; each body is its event as stored. */
export interface Appended {
  readonly events: readonly Event[];
  readonly bodies: readonly Uint8Array[];
  /** The lease epoch they were appended under, if any: a watch of that lease's holder leaves them out (WatchEventsRequest.except_lease_epoch). */
  readonly leaseEpoch?: number | undefined;
}

export type Poke = (sessionId: string, lastSeq: number, appended?: Appended) => void;

/** Poked instead of a seq after the LISTEN connection came back: re-read once, whatever the seq. */
export const RECHECK = Number.MAX_SAFE_INTEGER;

export class AppendHub {
  private readonly bySession = new Map<string, Set<Poke>>();
  private readonly everyone = new Set<Poke>();
  private readonly listener: ResilientListener;
  /** Who this instance is on EVENTS_CHANNEL: appenders start their NOTIFY payloads with its prefix. */
  readonly payloads = new NotifyPayloads();
  /** Sessions' last seqs as snapshots here saw them, carried forward by the pokes (heads.ts). */
  readonly heads = new SessionHeads();

  constructor(db: Db, logger: Logger) {
    this.listener = new ResilientListener(
      db,
      EVENTS_CHANNEL,
      (payload) => {
        for (const item of this.payloads.parse(payload) ?? []) {
          const at = item.lastIndexOf(":");
          if (at > 0) this.publish(item.slice(0, at), Number(item.slice(at + 1)));
        }
      },
      // Whatever was appended while the connection was gone: wake everyone to re-read, and
      // forget every head (their appends' NOTIFYs may be among the lost).
      () => {
        this.heads.forgetAll();
        for (const sessionId of this.bySession.keys()) this.publish(sessionId, RECHECK);
      },
      logger,
    );
  }

  async start(): Promise<void> {
    await this.listener.start();
  }

  /** Calls `poke` whenever the session's log grows. Returns the unsubscribe function. */
  subscribe(sessionId: string, poke: Poke): () => void {
    let set = this.bySession.get(sessionId);
    if (set === undefined) {
      set = new Set();
      this.bySession.set(sessionId, set);
    }
    set.add(poke);
    return () => {
      set.delete(poke);
      if (set.size === 0) this.bySession.delete(sessionId);
    };
  }

  /** Calls `poke` for every append to any session. */
  subscribeAll(poke: Poke): () => void {
    this.everyone.add(poke);
    return () => this.everyone.delete(poke);
  }

  /**
   * Runs `read`, a statement whose snapshot tells the session's last seq (undefined: it does not,
   * or the session is terminated), and learns that head: the appends heard of meanwhile are
   * counted against it, so one committed after the snapshot and heard first does not go unseen.
   */
  async learnHead<T>(sessionId: string, read: () => Promise<T>, lastSeqOf: (result: T) => number | undefined): Promise<T> {
    let heard = 0;
    const stop = this.subscribe(sessionId, (_id, lastSeq) => (heard = Math.max(heard, lastSeq)));
    try {
      const result = await read();
      const lastSeq = lastSeqOf(result);
      if (lastSeq !== undefined) this.heads.learn(sessionId, lastSeq, heard);
      return result;
    } finally {
      stop();
    }
  }

  /** The session's log grew to `lastSeq` (committed here, with what it stored, or heard of from another instance). */
  publish(sessionId: string, lastSeq: number, appended?: Appended): void {
    if (appended?.events.some((e) => e.type === "session.status_terminated") === true) this.heads.forget(sessionId);
    else this.heads.heardOf(sessionId, lastSeq, appended?.events[0]?.seq);
    for (const poke of this.everyone) poke(sessionId, lastSeq);
    const set = this.bySession.get(sessionId);
    if (set !== undefined) for (const poke of set) poke(sessionId, lastSeq, appended);
  }

  async stop(): Promise<void> {
    await this.listener.stop();
  }
}
