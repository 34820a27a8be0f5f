/**
 * LeaseKeeper.acquire tells the log's two refusals apart by the field they name: a lease held
 * elsewhere (`holder`) and a session that ended (`session_id`), so a wake that races a session's
 * termination ends as "nothing to do", not as "held elsewhere".
 */
import { describe, expect, it } from "vitest";
import { MhError } from "@metaharness/errors";
import { createLogger } from "@metaharness/service-kit/logging";
import { ManualClock } from "@metaharness/service-kit/testing";
import { LeaseKeeper } from "./lease-keeper.js";
import type { SessionLogClient } from "./log-port.js";

const logger = createLogger({ service: "lease-keeper-test", level: "silent" });

function refusing(err: MhError): SessionLogClient {
  const client: Pick<SessionLogClient, "acquireLease"> = { acquireLease: () => Promise.reject(err) };
  return client as SessionLogClient;
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
  /** A log whose renewals answer after `delayMs`, and fail as gRPC would when that is past the call's deadline. */
  function slowLog(clock: ManualClock, delayMs: number): SessionLogClient & { renewals: number[] } {
    const lease = { holder: "harness-a", epoch: 1, expiresAt: new Date() };
    const renewals: number[] = [];
    const client: Pick<SessionLogClient, "acquireLease" | "renewLease" | "releaseLease"> = {
      acquireLease: () => Promise.resolve({ lease, session: undefined, events: [] }),
      renewLease: (_req, opts) =>
        new Promise((resolve, reject) => {
          renewals.push(clock.now());
          const deadline = opts?.deadlineMs ?? Number.POSITIVE_INFINITY;
          if (delayMs > deadline) clock.setTimeout(() => reject(new MhError("DEADLINE_EXCEEDED", "deadline exceeded")), deadline);
          else clock.setTimeout(() => resolve({ lease }), delayMs);
        }),
      releaseLease: () => Promise.resolve({}),
    };
    return Object.assign(client as SessionLogClient, { renewals });
  }

  /** A keeper of a 1 s lease taken at time 0 of `clock` from `log`. */
  async function keeperOn(clock: ManualClock, log: SessionLogClient): Promise<LeaseKeeper> {
    const keeper = await LeaseKeeper.acquire(log, "sesn_a", "harness-a", 1000, logger, clock);
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
});
