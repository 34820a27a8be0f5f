/**
 * The append hub: tells watchers and the outbox relay that a session's log grew. Appends in this
 * process poke it directly (no round trip); appends anywhere else arrive through Postgres
 * LISTEN/NOTIFY on one dedicated connection. A poke only says "read again from where you are":
 * readers always fetch from the log, so a lost or doubled poke costs latency, never correctness.
 */
import type { Logger } from "@metaharness/service-kit";
import type { Db } from "../db/db.js";
import { EVENTS_CHANNEL } from "../store/append.js";

export type Poke = (sessionId: string, lastSeq: number) => void;

const RECONNECT_MAX_MS = 5000;

export class AppendHub {
  private readonly bySession = new Map<string, Set<Poke>>();
  private readonly everyone = new Set<Poke>();
  private unlisten: (() => Promise<void>) | undefined;
  private stopped = false;
  private reconnectDelayMs = 100;
  private reconnectTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    await this.connect();
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
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    const unlisten = this.unlisten;
    this.unlisten = undefined;
    await unlisten?.();
  }

  private async connect(): Promise<void> {
    let lost = false;
    this.unlisten = await this.db.listen(
      EVENTS_CHANNEL,
      (payload) => {
        const at = payload.lastIndexOf(":");
        if (at > 0) this.publish(payload.slice(0, at), Number(payload.slice(at + 1)));
      },
      (err) => {
        if (lost) return;
        lost = true;
        this.logger.warn({ err }, "append hub lost its LISTEN connection; reconnecting");
        this.scheduleReconnect();
      },
    );
    this.reconnectDelayMs = 100;
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer !== undefined) return;
    const dead = this.unlisten;
    this.unlisten = undefined;
    dead?.().catch(() => undefined);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.connect()
        .then(() => {
          this.logger.info({}, "append hub reconnected");
          // Whatever was appended while we were away: wake everyone to re-read.
          for (const sessionId of this.bySession.keys()) this.publish(sessionId, Number.MAX_SAFE_INTEGER);
        })
        .catch((err: unknown) => {
          this.logger.warn({ err }, "append hub reconnect failed");
          this.reconnectDelayMs = Math.min(this.reconnectDelayMs * 2, RECONNECT_MAX_MS);
          this.scheduleReconnect();
        });
    }, this.reconnectDelayMs);
  }
}
