/**
 * Ephemeral deltas (tokens of a model response still streaming): handed at once to this
 * instance's watchers, and to other instances' through NOTIFY on `mh_deltas`. Never stored: a
 * watcher that was not there misses them, and gets the complete message as an event anyway.
 */
import { EventDelta } from "@metaharness/proto";
import type { Logger } from "@metaharness/service-kit/logging";
import type { Db } from "@metaharness/db";
import { ResilientListener } from "@metaharness/db";
import { NotifyBatcher } from "@metaharness/db";

export const DELTAS_CHANNEL = "mh_deltas";

export type DeltaSink = (delta: EventDelta) => void;

export class DeltaHub {
  private readonly sinks = new Map<string, Set<DeltaSink>>();
  private readonly listener: ResilientListener;
  private readonly batcher: NotifyBatcher;

  constructor(db: Db, logger: Logger) {
    this.batcher = new NotifyBatcher(db, DELTAS_CHANNEL, logger);
    this.listener = new ResilientListener(db, DELTAS_CHANNEL, (payload) => this.onNotify(payload), () => undefined, logger);
  }

  start(): Promise<void> {
    return this.listener.start();
  }

  async stop(): Promise<void> {
    await this.batcher.flush();
    await this.listener.stop();
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
    for (const delta of deltas) {
      this.deliver(delta);
      this.batcher.enqueue(Buffer.from(EventDelta.encode(delta).finish()).toString("base64"));
    }
    return this.batcher.sent();
  }

  private deliver(delta: EventDelta): void {
    const set = this.sinks.get(delta.sessionId);
    if (set !== undefined) for (const sink of set) sink(delta);
  }

  private onNotify(payload: string): void {
    for (const part of this.batcher.parse(payload) ?? []) {
      this.deliver(EventDelta.decode(Buffer.from(part, "base64")));
    }
  }
}
