/**
 * LeaseKeeper.acquire tells the log's two refusals apart by the field they name: a lease held
 * elsewhere (`holder`) and a session that ended (`session_id`), so a wake that races a session's
 * termination ends as "nothing to do", not as "held elsewhere". Renewals keep their timing when
 * the instance's LeaseRenewer sends the leases due together, each keeper taking its own outcome,
 * and stop while the session lingers inside its lease.
 */
import { describe, expect, it } from "vitest";
import { MhError } from "@metaharness/errors";
import { createLogger } from "@metaharness/service-kit/logging";
import { ManualClock } from "@metaharness/service-kit/testing";
import { LeaseRenewal_Outcome, type LeaseRenewal, type RenewLeasesRequest } from "@metaharness/proto";
import { LeaseKeeper } from "./lease-keeper.js";
import { LeaseRenewer } from "./lease-renewer.js";
import type { SessionLogClient } from "./log-port.js";

const logger = createLogger({ service: "lease-keeper-test", level: "silent" });

function refusing(err: MhError): LeaseRenewer {
  const client: Pick<SessionLogClient, "acquireLease"> = { acquireLease: () => Promise.reject(err) };
  return new LeaseRenewer(client as SessionLogClient);
}

describe("LeaseKeeper.acquire", () => {
  it("reports the holder when the lease is held elsewhere", async () => {
    const held = new MhError("FAILED_PRECONDITION", "leased to harness-b", { field: "holder", details: { holder: "harness-b", epoch: 3 } });
    expect(await LeaseKeeper.acquire(refusing(held), "sesn_a", "harness-a", 1000, logger)).toEqual({ heldBy: "harness-b" });
  });

  it("reports a terminated session as such", async () => {
    const ended = new MhError("FAILED_PRECONDITION", "session sesn_a is terminated; it takes no lease", { field: "session_id" });
    expect(await LeaseKeeper.acquire(refusing(ended), "sesn_a", "harness-a", 1000, logger)).toBe("terminated");
  });

  it("passes other failures on", async () => {
    const down = new MhError("UNAVAILABLE", "no log");
    await expect(LeaseKeeper.acquire(refusing(down), "sesn_a", "harness-a", 1000, logger)).rejects.toMatchObject({ code: "UNAVAILABLE" });
  });
});

describe("LeaseKeeper renewals", () => {
  // Time is the subject: a ManualClock moves it, and the log's answers come on that clock too.
  /**
   * A log whose renewals answer after `delayMs` (renewing all but the sessions in `lost`, which
   * another holder took), and fail as gRPC would when that is past the call's deadline, or with
   * `failWith` when set.
   */
  function slowLog(clock: ManualClock, delayMs: number, opts: { lost?: string[]; failWith?: MhError } = {}) {
    const lease = { holder: "harness-a", epoch: 1, expiresAt: new Date() };
    const renewals: number[] = [];
    const calls: Array<{ at: number; sessions: string[] }> = [];
    const releases: number[] = [];
    const failWith = opts.failWith;
    const outcome = (l: RenewLeasesRequest["leases"][number]): LeaseRenewal =>
      opts.lost?.includes(l.sessionId)
        ? { sessionId: l.sessionId, outcome: LeaseRenewal_Outcome.OUTCOME_ABORTED, lease: undefined, currentEpoch: 2 }
        : { sessionId: l.sessionId, outcome: LeaseRenewal_Outcome.OUTCOME_RENEWED, lease, currentEpoch: 0 };
    const client: Pick<SessionLogClient, "acquireLease" | "renewLeases" | "releaseLease"> = {
      acquireLease: () => Promise.resolve({ lease, session: undefined, events: [] }),
      renewLeases: (req, callOpts) =>
        new Promise((resolve, reject) => {
          renewals.push(clock.now());
          calls.push({ at: clock.now(), sessions: req.leases.map((l) => l.sessionId) });
          const deadline = callOpts?.deadlineMs ?? Number.POSITIVE_INFINITY;
          if (delayMs > deadline) clock.setTimeout(() => reject(new MhError("DEADLINE_EXCEEDED", "deadline exceeded")), deadline);
          else if (failWith !== undefined) clock.setTimeout(() => reject(failWith), delayMs);
          else clock.setTimeout(() => resolve({ renewals: req.leases.map(outcome) }), delayMs);
        }),
      releaseLease: () => {
        releases.push(clock.now());
        return Promise.resolve({});
      },
    };
    return Object.assign(client as SessionLogClient, { renewals, calls, releases });
  }

  /** A keeper of a 1 s lease of `sessionId` taken now on `clock` from `log`, through `renewer` (a new one by default). */
  async function keeperOn(clock: ManualClock, log: SessionLogClient, renewer = new LeaseRenewer(log, clock), sessionId = "sesn_a"): Promise<LeaseKeeper> {
    const keeper = await LeaseKeeper.acquire(renewer, sessionId, "harness-a", 1000, logger);
    if (!(keeper instanceof LeaseKeeper)) throw new Error("no lease");
    return keeper;
  }

  it("keeps a lease whose renewals answer late but before it expires (a loaded machine)", async () => {
    const clock = new ManualClock();
    const log = slowLog(clock, 450);
    const keeper = await keeperOn(clock, log);
    try {
      // The first renewal at a third of the TTL; each later one as soon as the answer before it
      // comes, 450 ms after its send (its third had passed): every answer lands while the lease runs.
      await clock.advance(3000);
      expect(keeper.signal.aborted).toBe(false);
      expect(log.renewals).toEqual([333, 783, 1233, 1683, 2133, 2583]);
    } finally {
      await keeper.release();
    }
  });

  it("gives the lease up the moment it expires when no renewal lands, not before", async () => {
    const clock = new ManualClock();
    const keeper = await keeperOn(clock, slowLog(clock, 5000));
    try {
      // The renewal sent at 333 ms is given what is left of the lease (667 ms) and fails at 1000.
      await clock.advance(999);
      expect(keeper.signal.aborted).toBe(false);
      await clock.advance(1);
      expect(keeper.signal.aborted).toBe(true);
      expect(keeper.signal.reason).toMatchObject({ code: "ABORTED" });
    } finally {
      await keeper.release();
    }
  });

  it("renews nothing while the session lingers inside its lease, and gives it back unrenewed", async () => {
    const clock = new ManualClock();
    const log = slowLog(clock, 10);
    const keeper = await keeperOn(clock, log);
    try {
      // The turn ended at 100 ms; a 600 ms linger ends at 700, more than a sixth of the TTL
      // (167 ms) before the lease's 1000: the renewal due at 333 is not sent.
      await clock.advance(100);
      keeper.lingering(600);
      await clock.advance(600);
      expect(log.renewals).toEqual([]);
      expect(keeper.signal.aborted).toBe(false);
    } finally {
      await keeper.release();
    }
  });

  it("renews a lingering lease once when the linger would end near its end, and throughout a longer linger", async () => {
    const clock = new ManualClock();
    const log = slowLog(clock, 10);
    const keeper = await keeperOn(clock, log);
    const long = await keeperOn(clock, log, undefined, "sesn_b");
    try {
      await clock.advance(100);
      // 100 + 750 + 167 > 1000: within the margin; once renewed at 333 (to 1333) it is not.
      keeper.lingering(750);
      long.lingering(5000);
      await clock.advance(750);
      expect(log.calls.filter((c) => c.sessions.includes("sesn_a")).map((c) => c.at)).toEqual([333]);
      expect(log.calls.filter((c) => c.sessions.includes("sesn_b")).map((c) => c.at)).toEqual([333, 666]);
    } finally {
      await keeper.release();
      await long.release();
    }
  });

  it("renews at once when input comes after a renewal fell due in the linger, then as usual", async () => {
    const clock = new ManualClock();
    const log = slowLog(clock, 10);
    const keeper = await keeperOn(clock, log);
    try {
      await clock.advance(100);
      keeper.lingering(600);
      await clock.advance(400);
      keeper.resume();
      await clock.advance(0);
      // Sent at 500, answered at 510: the lease runs to 1500, the next renewal a third later.
      await clock.advance(500);
      expect(log.renewals).toEqual([500, 833]);
      expect(keeper.signal.aborted).toBe(false);
    } finally {
      await keeper.release();
    }
  });

  it("renews when it was due when input comes before that", async () => {
    const clock = new ManualClock();
    const log = slowLog(clock, 10);
    const keeper = await keeperOn(clock, log);
    try {
      await clock.advance(100);
      keeper.lingering(600);
      await clock.advance(100);
      keeper.resume();
      await clock.advance(300);
      expect(log.renewals).toEqual([333]);
    } finally {
      await keeper.release();
    }
  });

  /**
   * A keeper whose turn's last append, `at` ms after the lease was taken, set the lease to run out
   * with a 600 ms linger and a sixth of the TTL (767 ms), and which then lingers; the log answers
   * renewals after `delayMs`.
   */
  async function lingeringAfterItsAppend(at: number, delayMs: number) {
    const clock = new ManualClock();
    const log = slowLog(clock, delayMs);
    const keeper = await keeperOn(clock, log);
    await clock.advance(at);
    keeper.appending(Promise.resolve(), 767);
    await clock.advance(0);
    keeper.lingering(600);
    return { clock, log, keeper };
  }

  it("neither renews nor releases a lease the turn's last append set to run out with a linger that ran out", async () => {
    const { clock, log, keeper } = await lingeringAfterItsAppend(100, 10);
    await clock.advance(600);
    keeper.ranOut();
    await keeper.release();
    expect([log.renewals, log.releases, keeper.signal.aborted]).toEqual([[], [], true]);
  });

  it("renews such a lease when input comes in the linger, and releases it as before", async () => {
    const { clock, log, keeper } = await lingeringAfterItsAppend(100, 10);
    await clock.advance(300);
    // Due at 200 (a third of the TTL past the 867 - 1000 it counts as renewed at): sent at once.
    keeper.resume();
    await clock.advance(100);
    await keeper.release();
    expect([log.renewals, log.releases]).toEqual([[400], [500]]);
  });

  it("releases such a lease as before when a renewal was on its way as the append landed (it may land after it)", async () => {
    // The renewal sent at 333 is answered at 633, after the append at 400.
    const { clock, log, keeper } = await lingeringAfterItsAppend(400, 300);
    await clock.advance(600);
    keeper.ranOut();
    await keeper.release();
    expect([log.renewals, log.releases]).toEqual([[333], [1000]]);
  });

  it("renews the leases due together in one call, and each keeper takes its own outcome", async () => {
    const clock = new ManualClock();
    const log = slowLog(clock, 10, { lost: ["sesn_c"] });
    const renewer = new LeaseRenewer(log, clock);
    const a = await keeperOn(clock, log, renewer, "sesn_a");
    await clock.advance(50);
    // Due at 383 and 413, within a quarter of the interval (83 ms) of a's 333: they go with a.
    const b = await keeperOn(clock, log, renewer, "sesn_b");
    await clock.advance(30);
    const c = await keeperOn(clock, log, renewer, "sesn_c");
    await clock.advance(220);
    // Due at 633, on its own; a and b, due at 666, go with it, and all three stay together.
    const d = await keeperOn(clock, log, renewer, "sesn_d");
    try {
      await clock.advance(1000 - clock.now());
      expect(log.calls).toEqual([
        { at: 333, sessions: ["sesn_a", "sesn_b", "sesn_c"] },
        { at: 633, sessions: ["sesn_d", "sesn_a", "sesn_b"] },
        { at: 966, sessions: ["sesn_d", "sesn_a", "sesn_b"] },
      ]);
      // Another holder took c: it alone is aborted.
      expect(c.signal.aborted).toBe(true);
      expect(c.signal.reason).toMatchObject({ code: "ABORTED" });
      expect([a, b, d].map((k) => k.signal.aborted)).toEqual([false, false, false]);
    } finally {
      await Promise.all([a, b, c, d].map((k) => k.release()));
    }
  });

  it("retries each lease of a failed call soon, together, until its lease expires", async () => {
    const clock = new ManualClock();
    const log = slowLog(clock, 20, { failWith: new MhError("UNAVAILABLE", "log restarting") });
    const renewer = new LeaseRenewer(log, clock);
    const a = await keeperOn(clock, log, renewer, "sesn_a");
    const b = await keeperOn(clock, log, renewer, "sesn_b");
    try {
      // Sent at 333, failed at 353, sent again 50 ms later: every 70 ms while the lease runs.
      await clock.advance(500);
      expect(log.calls.map((c) => c.at)).toEqual([333, 403, 473]);
      expect(log.calls.every((c) => c.sessions.length === 2)).toBe(true);
      // The attempt sent at 963 fails at 983, with 17 ms of lease left: once more at 1033, given
      // the least (100 ms); it fails at 1053, the lease expired: both stop, as a lone keeper did.
      await clock.advance(552);
      expect(a.signal.aborted || b.signal.aborted).toBe(false);
      await clock.advance(1);
      expect([a.signal.aborted, b.signal.aborted]).toEqual([true, true]);
    } finally {
      await Promise.all([a, b].map((k) => k.release()));
    }
  });

  it("gives each lease of a call as long as its own lease runs, not the call's longest", async () => {
    const clock = new ManualClock();
    const log = slowLog(clock, 5000);
    const renewer = new LeaseRenewer(log, clock);
    const a = await keeperOn(clock, log, renewer, "sesn_a");
    await clock.advance(60);
    // Due at 393, sent with a at 333: a's lease runs to 1000, b's to 1060.
    const b = await keeperOn(clock, log, renewer, "sesn_b");
    try {
      await clock.advance(999 - clock.now());
      expect([a.signal.aborted, b.signal.aborted]).toEqual([false, false]);
      await clock.advance(1);
      expect([a.signal.aborted, b.signal.aborted]).toEqual([true, false]);
      await clock.advance(60);
      expect(b.signal.aborted).toBe(true);
      expect(log.calls).toEqual([{ at: 333, sessions: ["sesn_a", "sesn_b"] }]);
    } finally {
      await Promise.all([a, b].map((k) => k.release()));
    }
  });

  it("renews one lease a call through a log without RenewLeases (an earlier release)", async () => {
    const clock = new ManualClock();
    const lease = { holder: "harness-a", epoch: 1, expiresAt: new Date() };
    const calls: Array<[string, number]> = [];
    const client: Pick<SessionLogClient, "acquireLease" | "renewLeases" | "renewLease" | "releaseLease"> = {
      acquireLease: () => Promise.resolve({ lease, session: undefined, events: [] }),
      renewLeases: () => (calls.push(["RenewLeases", clock.now()]), Promise.reject(new MhError("UNIMPLEMENTED", "unknown method"))),
      renewLease: () => (calls.push(["RenewLease", clock.now()]), Promise.resolve({ lease })),
      releaseLease: () => Promise.resolve({}),
    };
    const log = client as SessionLogClient;
    const renewer = new LeaseRenewer(log, clock);
    const a = await keeperOn(clock, log, renewer, "sesn_a");
    const b = await keeperOn(clock, log, renewer, "sesn_b");
    try {
      await clock.advance(1000);
      expect(calls).toEqual([
        ["RenewLeases", 333],
        ["RenewLease", 383],
        ["RenewLease", 383],
        ["RenewLease", 716],
        ["RenewLease", 716],
      ]);
      expect([a.signal.aborted, b.signal.aborted]).toEqual([false, false]);
    } finally {
      await Promise.all([a, b].map((k) => k.release()));
    }
  });
});
