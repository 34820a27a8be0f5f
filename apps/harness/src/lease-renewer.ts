/**
 * One instance's lease renewals, sent together: each LeaseKeeper says when its lease is next due
 * and how early it may go, and every tick sends the leases due then (or due soon) in one
 * RenewLeases call, one statement in the log, and hands each keeper its own outcome. A renewal
 * per session and TTL/3 was an RPC and an UPDATE each: 200 sessions kept after their turn cost
 * 200 a second. A keeper keeps its own timing: a lease sent together with others still waits for
 * its answer as long as its lease runs (and at least the least a renewal is given), not longer.
 * A log of an earlier release, without RenewLeases (UNIMPLEMENTED), is sent a RenewLease per lease
 * from then on, as before.
 */
import { CurrentEpoch, MhError } from "@metaharness/errors";
import { LeaseRenewal_Outcome, type LeaseRenewal } from "@metaharness/proto";
import { systemClock, type Clock, type ClockTimer } from "@metaharness/service-kit/lifecycle";
import type { SessionLogClient } from "./log-port.js";

/** The least a renewal is given, even with little of the lease left (the log may still take it). */
export const MIN_RENEW_DEADLINE_MS = 100;
/** The most leases one call carries (the log's limit). */
const MAX_PER_CALL = 1000;

/** A lease to keep, as its keeper shows it to the renewer. */
export interface Renewable {
  readonly sessionId: string;
  readonly holder: string;
  readonly epoch: number;
  readonly ttlMs: number;
  /** When the lease runs out as its keeper counts it (from the send of the last granting call). */
  readonly validUntil: number;
  /** A renewal of it was sent (each is then answered by renewed or failed, once). */
  sending?(): void;
  /** The renewal sent at `sentAt` extended it. */
  renewed(sentAt: number): void;
  /** The renewal failed: ABORTED or NOT_FOUND (lost), or a failure of the call (DEADLINE_EXCEEDED, UNAVAILABLE...). */
  failed(err: MhError): void;
}

interface Pending {
  readonly dueAt: number;
  /** The earliest it may go, with another lease's renewal. */
  readonly earliestAt: number;
}

interface InFlight {
  readonly lease: Renewable;
  readonly deadlineAt: number;
}

export class LeaseRenewer {
  private readonly pending = new Map<Renewable, Pending>();
  private timer: ClockTimer | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  /** The log answered RenewLeases with UNIMPLEMENTED: one RenewLease per lease. */
  private oneByOne = false;

  constructor(
    readonly client: SessionLogClient,
    readonly clock: Clock = systemClock,
  ) {}

  /** Renews `lease` at `dueAt`, or from `earliestAt` on if another lease's renewal goes then. */
  schedule(lease: Renewable, dueAt: number, earliestAt = dueAt): void {
    this.pending.set(lease, { dueAt, earliestAt: Math.min(earliestAt, dueAt) });
    if (dueAt < this.timerAt) this.arm(dueAt);
  }

  /** No more renewals of `lease` (an answer already on its way is still handed to it). */
  cancel(lease: Renewable): void {
    this.pending.delete(lease);
    if (this.pending.size === 0) this.disarm();
  }

  private arm(at: number): void {
    this.disarm();
    this.timerAt = at;
    this.timer = this.clock.setTimeout(() => this.tick(), Math.max(0, at - this.clock.now()));
  }

  private disarm(): void {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    const groups = new Map<string, Renewable[]>();
    let next = Number.POSITIVE_INFINITY;
    for (const [lease, p] of this.pending) {
      if (p.earliestAt > now) {
        next = Math.min(next, p.dueAt);
        continue;
      }
      this.pending.delete(lease);
      // One call names one holder and TTL (an instance has one of each; tests may have more).
      const key = `${lease.holder}\0${lease.ttlMs}`;
      const group = groups.get(key);
      if (group === undefined) groups.set(key, [lease]);
      else group.push(lease);
    }
    if (next !== Number.POSITIVE_INFINITY) this.arm(next);
    for (const group of groups.values()) {
      for (let i = 0; i < group.length; i += MAX_PER_CALL) this.send(group.slice(i, i + MAX_PER_CALL), now);
    }
  }

  /**
   * One call for `leases`, given as long as the longest-running of them; each one is failed with
   * DEADLINE_EXCEEDED at its own deadline if the answer has not come by then, as its own call was.
   */
  private send(leases: Renewable[], sentAt: number): void {
    const first = leases[0];
    if (first === undefined) return;
    for (const lease of leases) lease.sending?.();
    if (this.oneByOne) {
      for (const lease of leases) this.sendOne(lease, sentAt);
      return;
    }
    const open = leases
      .map((lease): InFlight => ({ lease, deadlineAt: sentAt + Math.max(MIN_RENEW_DEADLINE_MS, lease.validUntil - sentAt) }))
      .sort((a, b) => a.deadlineAt - b.deadlineAt);
    const lastDeadline = open[open.length - 1]?.deadlineAt ?? sentAt;
    let timer: ClockTimer | undefined;
    const expire = (): void => {
      const now = this.clock.now();
      while (open[0] !== undefined && open[0].deadlineAt <= now && open[0].deadlineAt < lastDeadline) {
        open.shift()?.lease.failed(new MhError("DEADLINE_EXCEEDED", "lease renewal: deadline exceeded"));
      }
      const soonest = open[0];
      timer = soonest !== undefined && soonest.deadlineAt < lastDeadline ? this.clock.setTimeout(expire, soonest.deadlineAt - now) : undefined;
    };
    expire();
    const settle = (each: (f: InFlight) => void): void => {
      this.clock.clearTimeout(timer);
      for (const f of open.splice(0)) each(f);
    };
    void this.client
      .renewLeases(
        { holder: first.holder, ttlMs: first.ttlMs, leases: leases.map((l) => ({ sessionId: l.sessionId, epoch: l.epoch })) },
        { deadlineMs: lastDeadline - sentAt },
      )
      .then(
        ({ renewals }) => {
          const bySession = new Map(renewals.map((r) => [r.sessionId, r]));
          settle(({ lease }) => outcome(lease, bySession.get(lease.sessionId), sentAt));
        },
        (err: unknown) => {
          const e = MhError.from(err);
          // Each keeper retries soon, then one lease a call.
          if (e.code === "UNIMPLEMENTED") this.oneByOne = true;
          settle(({ lease }) => lease.failed(e));
        },
      );
  }

  private sendOne(lease: Renewable, sentAt: number): void {
    const { sessionId, holder, epoch, ttlMs } = lease;
    void this.client
      .renewLease({ sessionId, holder, epoch, ttlMs }, { deadlineMs: Math.max(MIN_RENEW_DEADLINE_MS, lease.validUntil - sentAt) })
      .then(
        () => lease.renewed(sentAt),
        (err: unknown) => lease.failed(MhError.from(err)),
      );
  }
}

function outcome(lease: Renewable, renewal: LeaseRenewal | undefined, sentAt: number): void {
  switch (renewal?.outcome) {
    case LeaseRenewal_Outcome.OUTCOME_RENEWED:
      lease.renewed(sentAt);
      return;
    case LeaseRenewal_Outcome.OUTCOME_ABORTED:
      lease.failed(
        new MhError("ABORTED", `${lease.holder} no longer holds epoch ${lease.epoch} of session ${lease.sessionId} (epoch ${renewal.currentEpoch} now)`, {
          field: "epoch",
          details: CurrentEpoch.of({ current_epoch: renewal.currentEpoch }),
        }),
      );
      return;
    case LeaseRenewal_Outcome.OUTCOME_NOT_FOUND:
      lease.failed(new MhError("NOT_FOUND", `session ${lease.sessionId} not found`, { field: "session_id" }));
      return;
    default:
      lease.failed(new MhError("INTERNAL", `RenewLeases gave no outcome for ${lease.sessionId}`));
  }
}
