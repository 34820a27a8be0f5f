/**
 * LeaseKeeper.acquire tells the log's two refusals apart by the field they name: a lease held
 * elsewhere (`holder`) and a session that ended (`session_id`), so a wake that races a session's
 * termination ends as "nothing to do", not as "held elsewhere".
 */
import { describe, expect, it } from "vitest";
import { MhError } from "@metaharness/errors";
import { createLogger } from "@metaharness/service-kit";
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
