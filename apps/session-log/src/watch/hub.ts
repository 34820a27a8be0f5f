/**
 * The append hub: tells watchers and the outbox relay that a session's log grew. Appends in this
 * process poke it directly (no round trip); appends anywhere else arrive through Postgres
 * LISTEN/NOTIFY on one dedicated connection. A poke only says "read again from where you are":
 * readers always fetch from the log, so a lost or doubled poke costs latency, never correctness.
 */
import type { Logger } from "@metaharness/service-kit";
import type { Db } from "../db/db.js";
import { ResilientListener } from "../db/listener.js";
import { EVENTS_CHANNEL } from "../store/append.js";

export type Poke = (sessionId: string, lastSeq: number) => void;

export class AppendHub {
  private readonly bySession = new Map<string, Set<Poke>>();
  private readonly everyone = new Set<Poke>();
  private readonly listener: ResilientListener;

  constructor(db: Db, logger: Logger) {
    this.listener = new ResilientListener(
      db,
      EVENTS_CHANNEL,
      (payload) => {
        const at = payload.lastIndexOf(":");
        if (at > 0) this.publish(payload.slice(0, at), Number(payload.slice(at + 1)));
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

  publish(sessionId: string, lastSeq: number): void {
    for (const poke of this.everyone) poke(sessionId, lastSeq);
    const set = this.bySession.get(sessionId);
    if (set !== undefined) for (const poke of set) poke(sessionId, lastSeq);
  }

  async stop(): Promise<void> {
    await this.listener.stop();
  }
}
