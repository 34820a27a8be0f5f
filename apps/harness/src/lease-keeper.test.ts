/**
 * LeaseKeeper.acquire tells the log's two refusals apart by the field they name: a lease held
 * elsewhere (`holder`) and a session that ended (`session_id`), so a wake that races a session's
 * termination ends as "nothing to do", not as "held elsewhere".
 */
import { describe, expect, it } from "vitest";
import { MhError } from "@metaharness/errors";
import { createLogger } from "@metaharness/service-kit/logging";
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
  /** A log whose renewals answer after `delayMs`, and fail as gRPC would when that is past the call's deadline. */
  function slowLog(delayMs: number): SessionLogClient {
    const lease = { holder: "harness-a", epoch: 1, expiresAt: new Date() };
    const client: Pick<SessionLogClient, "acquireLease" | "renewLease" | "releaseLease"> = {
      acquireLease: () => Promise.resolve({ lease }),
      renewLease: (_req, opts) =>
        new Promise((resolve, reject) => {
          const deadline = opts?.deadlineMs ?? Number.POSITIVE_INFINITY;
          if (delayMs > deadline) setTimeout(() => reject(new MhError("DEADLINE_EXCEEDED", "deadline exceeded")), deadline);
          else setTimeout(() => resolve({ lease }), delayMs);
        }),
      releaseLease: () => Promise.resolve({}),
    };
    return client as SessionLogClient;
  }

  /** Whether a 1 s lease is lost within `waitMs` when every renewal answers after `delayMs`. */
  async function lostWith(delayMs: number, waitMs: number): Promise<boolean> {
    const keeper = await LeaseKeeper.acquire(slowLog(delayMs), "sesn_a", "harness-a", 1000, logger);
    if (!(keeper instanceof LeaseKeeper)) throw new Error("no lease");
    try {
      // A fixed wait on purpose: watches the keeper for waitMs to see whether it gives the lease up.
      await new Promise((r) => setTimeout(r, waitMs));
      return keeper.signal.aborted;
    } finally {
      await keeper.release();
    }
  }

  it("keeps a lease whose renewals answer late but before it expires (a loaded machine)", async () => {
    // Renewed every 333 ms: an answer after 450 ms comes while the lease still runs.
    expect(await lostWith(450, 3000)).toBe(false);
  });

  it("gives the lease up when no renewal lands before it expires", async () => {
    expect(await lostWith(5000, 2500)).toBe(true);
  });
});
