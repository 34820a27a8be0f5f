/**
 * Whether this instance of the log is alone: whether another instance could be listening for
 * what it sends through NOTIFY. Every instance says it is there on the deltas channel as it
 * starts (before it serves) and every PEERS_EVERY_MS after; one that heard none from another
 * within PEERS_TTL_MS, and is sure it would have (its listener has been up that long), is alone,
 * and keeps its deltas to its own watchers: a NOTIFY per PublishDeltas, delivered back to its own
 * listener only to be skipped, was 1.3 of a text-only turn's 11 statements with one instance.
 * A listener that reconnected may have missed announcements: unsure again for a TTL, so not alone.
 */

/** How often an instance says it is there. */
export const PEERS_EVERY_MS = 2000;
/** How long an announcement counts: three of them missed in a row. */
export const PEERS_TTL_MS = 3 * PEERS_EVERY_MS;

export class Peers {
  private heardUntil = 0;
  private unsureUntil: number;

  constructor(
    private readonly ttlMs = PEERS_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.unsureUntil = now() + ttlMs;
  }

  /** Another instance said it is there. */
  heard(): void {
    this.heardUntil = this.now() + this.ttlMs;
  }

  /** Announcements may have been missed (the listener was away): count others as there for a TTL. */
  unsure(): void {
    this.unsureUntil = this.now() + this.ttlMs;
  }

  get alone(): boolean {
    const t = this.now();
    return t >= this.heardUntil && t >= this.unsureUntil;
  }
}
