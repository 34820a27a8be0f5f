/**
 * Holds a session's lease while a driver works on it: renews it at a third of its TTL and, the
 * moment a renewal says the lease is gone (ABORTED: someone else took it), aborts the driver's
 * signal so it stops at once. Renewal failures of the log itself (UNAVAILABLE) are retried until
 * the lease would have expired; then the driver stops too, since a successor may take over.
 * The renewals go through the instance's LeaseRenewer, with the other leases due then, in one
 * call; a keeper's timing is its own. Time is read from the renewer's Clock (the system's, or a
 * test's that moves on command). While the loop keeps the session between turns (lingering())
 * the lease is renewed only until it outlasts the linger by lingerMarginMs(); the turn's
 * last append sets it to run out with the linger (ranOutWith), and then, if no input comes, it is
 * neither renewed nor given back: a session of one turn, kept 2 s under a 3 s lease, paid two
 * renewals and a ReleaseLease for nothing.
 */
import { LeaseHolder, MhError } from "@metaharness/errors";
import type { Event, Lease, Session } from "@metaharness/proto";
import type { Clock } from "@metaharness/service-kit/lifecycle";
import type { ContextLogger } from "@metaharness/service-kit/logging";
import type { SessionLogClient } from "./log-port.js";
import type { LeaseRenewer, Renewable } from "./lease-renewer.js";

/** After a failed renewal, the next attempt. */
const RETRY_MS = 50;
/** How long a release may take before it is given up (see release()). */
const RELEASE_DEADLINE_MS = 1000;
/**
 * A linger that ends at least this share of the TTL (at most LINGER_MARGIN_MAX_MS) before the
 * lease needs no renewal: input that comes at its very end resumes the turn with this much of the
 * lease left for the renewal sent then (0.5 s of a 3 s lease; a renewal takes a round trip, ms on
 * a loaded machine).
 */
const LINGER_MARGIN = 1 / 6;
/**
 * The longest margin, whatever the TTL: a lease left to run out after a linger is held by no loop
 * for that long, and the gateway sends no Wake after input while more than its
 * MH_GATEWAY_WAKE_SKIP_LEASE_MS (1 s) is left. A sixth of a 60 s lease, 10 s after the linger,
 * had every send of those 10 s wait for the lease to run out and the sweeper.
 */
export const LINGER_MARGIN_MAX_MS = 500;

/** The margin by which a lingering session's lease outlasts the linger, for a lease of `ttlMs`. */
export function lingerMarginMs(ttlMs: number): number {
  return Math.min(Math.ceil(ttlMs * LINGER_MARGIN), LINGER_MARGIN_MAX_MS);
}
/** Why a lease's signal aborts when it is given back: made once (an Error per session captured a stack). */
const RELEASED = new MhError("CANCELLED", "lease released");

export class LeaseKeeper implements Renewable {
  private readonly controller = new AbortController();
  validUntil: number;
  /** When the loop's linger ends (clock ms), while it lingers. */
  private lingerUntil: number | undefined;
  /** The loop lingers and the lease outlasts the linger: no renewal until resume(). */
  private resting = false;
  /** Renewals sent and not yet answered. */
  private renewing = 0;
  /**
   * The turn's last append set the lease to run out with the linger (ranOutWith), and no renewal
   * may have extended it since: if the linger runs out, the lease ends by itself, unreleased.
   */
  private runsOut = false;
  /** The linger ran out with the lease set to run out with it: release() sends nothing. */
  private endsByItself = false;
  private readonly client: SessionLogClient;
  private readonly clock: Clock;

  private constructor(
    private readonly renewer: LeaseRenewer,
    readonly sessionId: string,
    readonly holder: string,
    readonly lease: Lease,
    /** The session as the lease was taken (AcquireLease returns it; undefined from a log that does not). */
    readonly session: Session | undefined,
    /** Its whole log, read with the lease, when the log sent all of it (a short session); else undefined. */
    readonly history: Event[] | undefined,
    readonly ttlMs: number,
    private readonly logger: ContextLogger,
    /** When the request that granted the lease was sent. */
    sentAt: number,
  ) {
    this.client = renewer.client;
    this.clock = renewer.clock;
    this.validUntil = sentAt + ttlMs;
  }

  /**
   * Takes the lease, or says why not: another holder's name when someone else holds it, or
   * `terminated` when the session ended (the log names `session_id` then, `holder` otherwise).
   */
  static async acquire(
    renewer: LeaseRenewer,
    sessionId: string,
    holder: string,
    ttlMs: number,
    logger: ContextLogger,
  ): Promise<LeaseKeeper | { heldBy: string } | "terminated"> {
    const { client, clock } = renewer;
    try {
      // The log counts the TTL from when it got the request, so from when we sent it is on the safe side.
      const sentAt = clock.now();
      const { lease, session, events } = await client.acquireLease({ sessionId, holder, ttlMs });
      if (lease === undefined) throw new MhError("INTERNAL", "AcquireLease returned no lease");
      // Complete when it holds every seq up to the session's last (seqs are dense from 1).
      const history = session !== undefined && events.length === session.lastSeq ? events : undefined;
      const keeper = new LeaseKeeper(renewer, sessionId, holder, lease, session, history, ttlMs, logger, sentAt);
      keeper.schedule(sentAt + keeper.interval());
      return keeper;
    } catch (err) {
      const e = MhError.from(err);
      if (e.code === "FAILED_PRECONDITION" && e.field === "session_id") return "terminated";
      if (e.code === "FAILED_PRECONDITION") return { heldBy: LeaseHolder.find(e)?.holder ?? "another harness" };
      throw e;
    }
  }

  get epoch(): number {
    return this.lease.epoch;
  }

  /** Aborted when the lease is lost or released. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Stops renewing and gives the lease back (best effort: it expires anyway). */
  async release(): Promise<void> {
    this.renewer.cancel(this);
    if (!this.controller.signal.aborted) this.controller.abort(RELEASED);
    // Set to run out with the linger that just ran out: it ends by itself, for the sweeper (or a
    // wake) to find if input came as it did; a wake here meanwhile takes it at the same epoch.
    if (this.endsByItself) return;
    // Bounded: a harness shutting down gives its leases back on the way out, and a log that does
    // not answer must not hold the shutdown (the lease then expires as after a crash).
    await this.client
      .releaseLease({ sessionId: this.sessionId, holder: this.holder, epoch: this.lease.epoch }, { deadlineMs: RELEASE_DEADLINE_MS })
      .catch(() => undefined);
  }

  /**
   * The loop keeps the session for `forMs` waiting for input. Once the lease runs past that by
   * lingerMarginMs() (at once, or after the one renewal that makes it), nothing is
   * renewed meanwhile: if no input comes the lease is given back before it ends; if some does,
   * resume() renews it as during a turn. A linger longer than that is renewed throughout.
   */
  lingering(forMs: number): void {
    if (this.controller.signal.aborted) return;
    this.lingerUntil = this.clock.now() + forMs;
    // Set by the turn's last append to run out with this linger: nothing to renew.
    if (this.runsOut || this.outlastsLinger()) this.rest();
  }

  /**
   * The append sent at `sentAt` (the turn's last) set the lease to run `ttlMs` from it
   * (EmitEventsRequest.lease_ttl_ms: the linger and a margin). Renewed as if renewed then; once
   * the loop lingers, not at all, and if the linger runs out the lease is left to run out too
   * (ranOut()): no ReleaseLease. A renewal on its way meanwhile may land after the append and
   * extend it: then it is released as before.
   */
  ranOutWith(sentAt: number, ttlMs: number): void {
    if (this.controller.signal.aborted) return;
    this.validUntil = sentAt + ttlMs;
    this.runsOut = this.renewing === 0;
    if (!this.resting) this.schedule(Math.max(this.clock.now(), this.validUntil - this.ttlMs + this.interval()));
  }

  /** `append` sets the lease to run `ttlMs` from its send once it lands (ranOutWith). */
  appending(append: Promise<unknown>, ttlMs: number): void {
    const sentAt = this.clock.now();
    append.then(
      () => this.ranOutWith(sentAt, ttlMs),
      () => undefined,
    );
  }

  /** The linger ran out with no input: a lease set to run out with it is not given back, it ends. */
  ranOut(): void {
    this.endsByItself = this.runsOut && this.resting;
  }

  /** Input came during the linger: renewed as if renewals had never stopped (at once if one is due). */
  resume(): void {
    this.runsOut = false;
    this.lingerUntil = undefined;
    if (!this.resting) return;
    this.resting = false;
    // The last renewal (or the acquire) was sent at validUntil - TTL; the next is due an interval after it.
    this.schedule(Math.max(this.clock.now(), this.validUntil - this.ttlMs + this.interval()));
  }

  private outlastsLinger(): boolean {
    return this.lingerUntil !== undefined && this.lingerUntil + lingerMarginMs(this.ttlMs) <= this.validUntil;
  }

  private rest(): void {
    this.resting = true;
    this.renewer.cancel(this);
  }

  private interval(): number {
    return Math.max(100, Math.floor(this.ttlMs / 3));
  }

  /**
   * The next renewal at `dueAt`; it may go up to a quarter of the interval earlier with other
   * leases (a lease renewed early only runs longer), so leases taken at different moments come
   * to be renewed together.
   */
  private schedule(dueAt: number, earliestAt = dueAt - Math.floor(this.interval() / 4)): void {
    if (!this.controller.signal.aborted) this.renewer.schedule(this, dueAt, earliestAt);
  }

  /** Renewable: a renewal of the lease was sent. */
  sending(): void {
    this.renewing += 1;
  }

  /** Renewable: the renewal sent at `sentAt` extended the lease. */
  renewed(sentAt: number): void {
    this.renewing -= 1;
    // It may have landed after the append that set the lease to run out with the linger.
    this.runsOut = false;
    if (this.controller.signal.aborted) return;
    // As at acquire: counted from the send, not the reply, which may come late.
    this.validUntil = sentAt + this.ttlMs;
    // It now outlasts the linger (or was sent before the linger began, which it outlasts already):
    // resume() schedules the next.
    if (this.resting || this.outlastsLinger()) {
      this.rest();
      return;
    }
    // The next one a third of the TTL after this one was sent, not answered: a slow answer
    // must not push the next renewal towards the expiry.
    this.schedule(Math.max(this.clock.now(), sentAt + this.interval()));
  }

  /**
   * Renewable: the renewal failed. A renewal may take as long as the lease still runs (the
   * renewer gives it that long): one that lands late but before the expiry keeps it. A deadline
   * of a third of the TTL lost leases on a loaded machine by the dozen (test/bench/recovery.ts)
   * while the log would still have renewed them.
   */
  failed(e: MhError): void {
    this.renewing -= 1;
    if (this.controller.signal.aborted) return;
    if (e.code === "ABORTED" || e.code === "NOT_FOUND" || this.clock.now() >= this.validUntil) {
      this.lose(e);
      return;
    }
    // Sent before the linger began, which the lease outlasts: resume() tries again if input comes.
    if (this.resting) return;
    this.logger.warn({ err: e, sessionId: this.sessionId }, "lease renewal failed; retrying");
    // Soon, not a third of the TTL later: what is left of the lease is what there is to try in.
    const at = this.clock.now() + RETRY_MS;
    this.schedule(at, at);
  }

  private lose(err: MhError): void {
    if (this.controller.signal.aborted) return;
    this.logger.warn({ sessionId: this.sessionId, epoch: this.lease.epoch, err }, "lease lost; stopping");
    this.controller.abort(new MhError("ABORTED", `lease of ${this.sessionId} lost: ${err.message}`));
  }
}
