/**
 * Ephemeral deltas (tokens of a model response still streaming): handed at once to this
 * instance's watchers, and to other instances' through NOTIFY on `mh_deltas`. Never stored: a
 * watcher that was not there misses them, and gets the complete message as an event anyway.
 */
import { randomBytes } from "node:crypto";
import { EventDelta } from "@metaharness/proto";
import type { Logger } from "@metaharness/service-kit";
import type { Db } from "../db/db.js";
import { ResilientListener } from "../db/listener.js";

export const DELTAS_CHANNEL = "mh_deltas";
// NOTIFY payloads must stay under 8000 bytes.
const MAX_NOTIFY_BYTES = 7000;

export type DeltaSink = (delta: EventDelta) => void;

export class DeltaHub {
  private readonly sinks = new Map<string, Set<DeltaSink>>();
  private readonly instance = randomBytes(6).toString("hex");
  private readonly listener: ResilientListener;

  constructor(
    private readonly db: Db,
    logger: Logger,
  ) {
    this.listener = new ResilientListener(db, DELTAS_CHANNEL, (payload) => this.onNotify(payload), () => undefined, logger);
  }

  start(): Promise<void> {
    return this.listener.start();
  }

  stop(): Promise<void> {
    return this.listener.stop();
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

  /** Delivers locally at once, then tells the other instances. */
  async publish(deltas: readonly EventDelta[]): Promise<void> {
    for (const delta of deltas) this.deliver(delta);
    for (const payload of this.payloads(deltas)) {
      await this.db.query("SELECT pg_notify($1, $2)", [DELTAS_CHANNEL, payload]);
    }
  }

  private deliver(delta: EventDelta): void {
    const set = this.sinks.get(delta.sessionId);
    if (set !== undefined) for (const sink of set) sink(delta);
  }

  /** "<instance>|<base64 delta>,<base64 delta>..." in chunks under the NOTIFY limit. */
  private *payloads(deltas: readonly EventDelta[]): Generator<string> {
    let chunk: string[] = [];
    let size = 0;
    for (const delta of deltas) {
      const encoded = Buffer.from(EventDelta.encode(delta).finish()).toString("base64");
      if (encoded.length > MAX_NOTIFY_BYTES) continue; // bounded by PublishDeltas; never expected
      if (size + encoded.length + 1 > MAX_NOTIFY_BYTES && chunk.length > 0) {
        yield `${this.instance}|${chunk.join(",")}`;
        chunk = [];
        size = 0;
      }
      chunk.push(encoded);
      size += encoded.length + 1;
    }
    if (chunk.length > 0) yield `${this.instance}|${chunk.join(",")}`;
  }

  private onNotify(payload: string): void {
    const bar = payload.indexOf("|");
    if (bar < 0 || payload.slice(0, bar) === this.instance) return;
    for (const part of payload.slice(bar + 1).split(",")) {
      this.deliver(EventDelta.decode(Buffer.from(part, "base64")));
    }
  }
}
