/**
 * Whether this instance of the log is alone: whether another instance could be listening for
 * what it sends through NOTIFY. Every instance says it is there on the deltas channel as it
 * starts (before it serves) and every PEERS_EVERY_MS after; one that heard none from another
 * within PEERS_TTL_MS, and is sure it would have (its listener has been up that long), is alone,
 * and keeps its deltas to its own watchers: a NOTIFY per PublishDeltas, delivered back to its own
 * listener only to be skipped, was 1.3 of a text-only turn's 11 statements with one instance.
 * Its append batches then send no NOTIFY either (migrations/008: about 0.1 ms of Postgres a
 * commit). An instance that starts is heard within its first announcement's delivery, before it
 * serves unless the others' event loops lag; what it misses of their appends meanwhile reaches
 * its watchers at their next re-read (MH_WATCH_RECHECK_MS), as after a lost LISTEN connection.
 * A listener that is away (its connection lost, not yet back) hears nothing, so is never sure;
 * one that reconnected may have missed announcements: unsure again for a TTL, so not alone.
 * Times are the process's monotonic clock: a wall clock set back or forward moves no deadline.
 */
import { performance } from "node:perf_hooks";

/** How often an instance says it is there. */
export const PEERS_EVERY_MS = 2000;
/** How long an announcement counts: three of them missed in a row. */
export const PEERS_TTL_MS = 3 * PEERS_EVERY_MS;

export class Peers {
  private heardUntil = 0;
  private unsureUntil: number;
  private listening = true;

  constructor(
    private readonly ttlMs = PEERS_TTL_MS,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.unsureUntil = now() + ttlMs;
  }

  /** Another instance said it is there. */
  heard(): void {
    this.heardUntil = this.now() + this.ttlMs;
  }

  /** The listener lost its connection: others count as there until it is back and a TTL after. */
  away(): void {
    this.listening = false;
  }

  /** Announcements may have been missed (the listener was away): count others as there for a TTL. */
  unsure(): void {
    this.listening = true;
    this.unsureUntil = this.now() + this.ttlMs;
  }

  get alone(): boolean {
    const t = this.now();
    return this.listening && t >= this.heardUntil && t >= this.unsureUntil;
  }
}
