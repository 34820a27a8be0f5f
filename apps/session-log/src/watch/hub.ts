/**
 * The append hub: tells watchers and the outbox relay that a session's log grew. Appends in this
 * process poke it directly (no round trip) once committed; other instances hear of them through
 * the NOTIFY that each batch of appends sends with its commit (mh_append, with this hub's
 * payload prefix), and their appends arrive here through LISTEN. A poke only says "read again
 * from where you are": readers always fetch from the log, so a lost or doubled poke costs
 * latency, never correctness.
 */
import type { Logger } from "@metaharness/service-kit/logging";
import type { Db } from "@metaharness/db";
import { NotifyPayloads, ResilientListener } from "@metaharness/db";

/** The channel appends are announced on: items "<session_id>:<last_seq>" (see NotifyPayloads). */
export const EVENTS_CHANNEL = "mh_events";

export type Poke = (sessionId: string, lastSeq: number) => void;

/** Poked instead of a seq after the LISTEN connection came back: re-read once, whatever the seq. */
export const RECHECK = Number.MAX_SAFE_INTEGER;

export class AppendHub {
  private readonly bySession = new Map<string, Set<Poke>>();
  private readonly everyone = new Set<Poke>();
  private readonly listener: ResilientListener;
  /** Who this instance is on EVENTS_CHANNEL: appenders start their NOTIFY payloads with its prefix. */
  readonly payloads = new NotifyPayloads();

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
      // Whatever was appended while the connection was gone: wake everyone to re-read.
      () => {
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

  /** The session's log grew to `lastSeq` (committed here, or heard of from another instance). */
  publish(sessionId: string, lastSeq: number): void {
    for (const poke of this.everyone) poke(sessionId, lastSeq);
    const set = this.bySession.get(sessionId);
    if (set !== undefined) for (const poke of set) poke(sessionId, lastSeq);
  }

  async stop(): Promise<void> {
    await this.listener.stop();
  }
}
