/**
 * The sessions' target fields (store.ts SessionTarget: tenant, environment, metadata, archival)
 * kept in memory, so that events.send, events.list and a stream's open do not read the session's
 * row each time (it was the one statement of a text-only turn through the SDK, issue 31). A copy
 * is forgotten when the row changes: at once for a change this instance makes, and for any other
 * (another gateway instance, a cascade) when the row's trigger (migration 007) NOTIFYs every
 * instance, which takes what a commit takes to reach a listener. While the LISTEN connection is
 * gone nothing is served from memory (a change then would go unheard); once it is back the copies
 * are dropped and kept anew. A read that a change overtook is not kept: `version` counts changes,
 * and a read keeps its result only if none came while it was under way. A copy is kept at most
 * `maxAgeMs` (MH_GATEWAY_TARGET_CACHE_MS): a LISTEN connection can be gone without an error (a
 * NAT's idle timeout, a half-open socket), and the changes it missed are then seen that late
 * rather than never, as a revoked API key is (auth/principals.ts). The agents and environments
 * sessions.create reads (sources.ts) are kept the same way on a channel of their own, where any
 * change drops every copy (`scope: "all"`).
 */
import { ResilientListener, type Db } from "@metaharness/db";
import type { Logger } from "@metaharness/service-kit/logging";

/** The trigger's channel; the payload is the session's id. */
export const SESSION_TARGET_CHANNEL = "mh_gw_session_target";

/** Sessions kept at most; past it the cache starts empty again (as auth/principals.ts does). */
const MAX_KEPT = 10_000;

interface Kept<T> {
  readonly tenant: string;
  readonly target: T;
  /** performance.now() past which it is read again. */
  readonly until: number;
}

export interface TargetCacheChannel {
  /** Where the changes are heard. */
  readonly channel: string;
  /** "row": a notification's payload names the one copy it changes; "all": it changes every copy. */
  readonly scope: "row" | "all";
  /** Copies kept at most; past it the cache starts empty again. */
  readonly maxKept: number;
}

const SESSION_TARGETS: TargetCacheChannel = { channel: SESSION_TARGET_CHANNEL, scope: "row", maxKept: MAX_KEPT };

export class TargetCache<T> {
  private readonly kept = new Map<string, Kept<T>>();
  /** Changes heard (and connections lost) so far: a read started before one is not kept. */
  private changes = 0;
  private listening = false;
  private listener: ResilientListener | undefined;

  /** `maxAgeMs`: how long a copy is served at most (0 keeps none). */
  constructor(
    private readonly maxAgeMs: number,
    private readonly heard: TargetCacheChannel = SESSION_TARGETS,
  ) {}

  /** Starts hearing changes; until then (and without it, in unit tests) nothing is kept. */
  async listen(db: Db, logger: Logger): Promise<void> {
    this.listener = new ResilientListener(
      db,
      this.heard.channel,
      (payload) => (this.heard.scope === "all" ? this.forgetAll() : this.forget(payload)),
      () => this.resume(),
      logger,
      () => this.suspend(),
    );
    await this.listener.start();
    this.resume();
  }

  async stop(): Promise<void> {
    this.suspend();
    await this.listener?.stop();
  }

  /** Where a read of the row starts: pass it to `keep` with what it read. */
  get version(): number {
    return this.changes;
  }

  /** The session's target as last read, if kept and of this tenant. */
  get(tenant: string, sessionId: string): T | undefined {
    if (!this.listening) return undefined;
    const k = this.kept.get(sessionId);
    if (k === undefined || k.tenant !== tenant) return undefined;
    if (performance.now() < k.until) return k.target;
    this.kept.delete(sessionId);
    return undefined;
  }

  /** Keeps what a read started at `version` found, unless a change came meanwhile. */
  keep(version: number, tenant: string, sessionId: string, target: T): void {
    if (!this.listening || version !== this.changes || this.maxAgeMs <= 0) return;
    if (this.kept.size >= this.heard.maxKept) this.kept.clear();
    this.kept.set(sessionId, { tenant, target, until: performance.now() + this.maxAgeMs });
  }

  /** The session's row changed (or is gone): its copy is dropped, and reads under way are not kept. */
  forget(sessionId: string): void {
    this.changes += 1;
    this.kept.delete(sessionId);
  }

  /** Every copy changed: all are dropped, and reads under way are not kept. */
  forgetAll(): void {
    this.changes += 1;
    this.kept.clear();
  }

  private suspend(): void {
    this.listening = false;
    this.changes += 1;
    this.kept.clear();
  }

  private resume(): void {
    this.changes += 1;
    this.kept.clear();
    this.listening = true;
  }
}
