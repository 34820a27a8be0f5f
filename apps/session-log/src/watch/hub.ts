/**
 * The append hub: tells watchers and the outbox relay that a session's log grew. Appends in this
 * process poke it directly (no round trip) and are announced to other instances after commit
 * through batched NOTIFY (db/notify-batcher.ts); their appends arrive here through LISTEN. A poke
 * only says "read again from where you are": readers always fetch from the log, so a lost or
 * doubled poke costs latency, never correctness.
 */
import type { Logger } from "@metaharness/service-kit";
import type { Db } from "@metaharness/db";
import { ResilientListener } from "@metaharness/db";
import { NotifyBatcher } from "@metaharness/db";

/** The channel appends are announced on: items "<session_id>:<last_seq>". */
export const EVENTS_CHANNEL = "mh_events";

export type Poke = (sessionId: string, lastSeq: number) => void;

export class AppendHub {
  private readonly bySession = new Map<string, Set<Poke>>();
  private readonly everyone = new Set<Poke>();
  private readonly listener: ResilientListener;
  private readonly batcher: NotifyBatcher;

  constructor(db: Db, logger: Logger) {
    this.batcher = new NotifyBatcher(db, EVENTS_CHANNEL, logger);
    this.listener = new ResilientListener(
      db,
      EVENTS_CHANNEL,
      (payload) => {
        for (const item of this.batcher.parse(payload) ?? []) {
          const at = item.lastIndexOf(":");
          if (at > 0) this.publish(item.slice(0, at), Number(item.slice(at + 1)));
        }
      },
      // Whatever was appended while the connection was gone: wake everyone to re-read.
      () => {
        for (const sessionId of this.bySession.keys()) this.publish(sessionId, Number.MAX_SAFE_INTEGER);
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

  /** An append committed here: poke this instance's readers now, and the other instances soon. */
  announce(sessionId: string, lastSeq: number): void {
    this.publish(sessionId, lastSeq);
    this.batcher.enqueue(`${sessionId}:${lastSeq}`);
  }

  publish(sessionId: string, lastSeq: number): void {
    for (const poke of this.everyone) poke(sessionId, lastSeq);
    const set = this.bySession.get(sessionId);
    if (set !== undefined) for (const poke of set) poke(sessionId, lastSeq);
  }

  async stop(): Promise<void> {
    await this.batcher.flush();
    await this.listener.stop();
  }
}
