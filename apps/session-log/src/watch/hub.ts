/**
 * The append hub: tells watchers and the outbox relay that a session's log grew. Appends in this
 * process poke it directly (no round trip); appends anywhere else arrive through Postgres
 * LISTEN/NOTIFY on one dedicated connection. A poke only says "read again from where you are":
 * readers always fetch from the log, so a lost or doubled poke costs latency, never correctness.
 */
import pg from "pg";
import type { Logger } from "@metaharness/service-kit";
import { EVENTS_CHANNEL } from "../store/append.js";

export type Poke = (sessionId: string, lastSeq: number) => void;

const RECONNECT_MAX_MS = 5000;

export class AppendHub {
  private readonly bySession = new Map<string, Set<Poke>>();
  private readonly everyone = new Set<Poke>();
  private client: pg.Client | undefined;
  private stopped = false;
  private reconnectDelayMs = 100;
  private reconnectTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly connectionString: string,
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
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString });
    client.on("notification", (msg) => {
      const payload = msg.payload ?? "";
      const at = payload.lastIndexOf(":");
      if (at > 0) this.publish(payload.slice(0, at), Number(payload.slice(at + 1)));
    });
    client.on("error", (err) => {
      if (this.client !== client) return;
      this.logger.warn({ err }, "append hub lost its LISTEN connection; reconnecting");
      this.scheduleReconnect();
    });
    this.client = client;
    await client.connect();
    await client.query(`LISTEN ${EVENTS_CHANNEL}`);
    this.reconnectDelayMs = 100;
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer !== undefined) return;
    const dead = this.client;
    this.client = undefined;
    dead?.end().catch(() => undefined);
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
