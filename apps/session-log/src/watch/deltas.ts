/**
 * Ephemeral deltas (tokens of a model response still streaming): handed at once to this
 * instance's watchers, and to other instances' through NOTIFY on `mh_deltas` unless this one is
 * alone (peers.ts: the instances say they are there on the same channel). Never stored: a
 * watcher that was not there misses them, and gets the complete message as an event anyway.
 */
import { EventDelta } from "@metaharness/proto";
import type { Logger } from "@metaharness/service-kit/logging";
import type { Db } from "@metaharness/db";
import { ResilientListener } from "@metaharness/db";
import { NotifyBatcher } from "@metaharness/db";
import { PEERS_EVERY_MS, Peers } from "./peers.js";

export const DELTAS_CHANNEL = "mh_deltas";
/**
 * An instance's "I am here" on the channel: a delta of no session (every real one has its
 * session's id), so that an instance of the previous release, which decodes every item as a
 * delta, delivers it to no one instead of failing on it.
 */
const HERE = Buffer.from(EventDelta.encode(EventDelta.fromPartial({ modelRequestId: "session-log instance here" })).finish()).toString("base64");

/** Receives deltas of its session delivered together (those of one publish), in order; never none. */
export type DeltaSink = (deltas: readonly EventDelta[]) => void;

export class DeltaHub {
  private readonly sinks = new Map<string, Set<DeltaSink>>();
  private readonly listener: ResilientListener;
  private readonly batcher: NotifyBatcher;
  private readonly peers = new Peers();
  private timer: NodeJS.Timeout | undefined;

  constructor(db: Db, logger: Logger) {
    this.batcher = new NotifyBatcher(db, DELTAS_CHANNEL, logger);
    this.listener = new ResilientListener(
      db,
      DELTAS_CHANNEL,
      (payload) => this.onNotify(payload),
      () => this.peers.unsure(),
      logger,
      () => this.peers.away(),
    );
  }

  /** Listens, and says it is there (before the service serves, so the others hear of it before its watchers come). */
  async start(): Promise<void> {
    await this.listener.start();
    this.batcher.enqueue(HERE);
    this.timer = setInterval(() => this.batcher.enqueue(HERE), PEERS_EVERY_MS);
    this.timer.unref();
    await this.batcher.sent();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.batcher.flush();
    await this.listener.stop();
  }

  /** No other instance of the log is there to hear what this one sends through NOTIFY (peers.ts). */
  get alone(): boolean {
    return this.peers.alone;
  }

  subscribe(sessionId: string, sink: DeltaSink): () => void {
    let set = this.sinks.get(sessionId);
    if (set === undefined) {
      set = new Set();
      this.sinks.set(sessionId, set);
    }
    set.add(sink);
    return () => {
      set.delete(sink);
      if (set.size === 0) this.sinks.delete(sessionId);
    };
  }

  /**
   * Delivers locally at once, then (batched) to the other instances; resolves once they were sent
   * to those, so that an append made after it (the message the deltas were tokens of) reaches
   * their watchers after them, as it does this instance's. Resolving at enqueue instead, a
   * message could overtake its last deltas on another instance (seen under load: "lo" of "Hel",
   * "lo" came after the stored "Hello").
   */
  publish(deltas: readonly EventDelta[]): Promise<void> {
    const others = !this.peers.alone;
    this.deliver(deltas);
    if (others) for (const delta of deltas) this.batcher.enqueue(Buffer.from(EventDelta.encode(delta).finish()).toString("base64"));
    return others ? this.batcher.sent() : Promise.resolve();
  }

  /** Hands each run of one session's deltas to that session's sinks at once. */
  private deliver(deltas: readonly EventDelta[]): void {
    let from = 0;
    for (let i = 1; i <= deltas.length; i++) {
      const sessionId = deltas[from]?.sessionId;
      if (i < deltas.length && deltas[i]?.sessionId === sessionId) continue;
      const set = sessionId === undefined ? undefined : this.sinks.get(sessionId);
      if (set !== undefined) {
        const run = from === 0 && i === deltas.length ? deltas : deltas.slice(from, i);
        for (const sink of set) sink(run);
      }
      from = i;
    }
  }

  private onNotify(payload: string): void {
    const deltas: EventDelta[] = [];
    for (const part of this.batcher.parse(payload) ?? []) {
      if (part === HERE) this.peers.heard();
      else deltas.push(EventDelta.decode(Buffer.from(part, "base64")));
    }
    this.deliver(deltas);
  }
}
