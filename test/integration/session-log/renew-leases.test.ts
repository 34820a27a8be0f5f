/**
 * RenewLeases: one statement renews several of a holder's leases, each as RenewLease would:
 * renewed (even just after expiry while nobody took it), another holder's or a newer epoch
 * (ABORTED with the session's epoch now), no such session (NOT_FOUND); a bad request names its
 * field and renews nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LeaseRenewal_Outcome } from "@metaharness/proto";
import { newSession as newSessionOf, rejection, startTestLog, type TestLog } from "../../support/session-log.js";
import { eventually } from "../../support/eventually.js";

let log: TestLog;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
});
afterAll(async () => {
  await log?.stop();
});

const newSession = (): Promise<string> => newSessionOf(log.client);

describe("RenewLeases", () => {
  it("renews the caller's leases and says, per session, why not the others", async () => {
    const [mine, expired, taken, newer, released] = await Promise.all([newSession(), newSession(), newSession(), newSession(), newSession()]);
    const acquire = async (sessionId: string, holder: string, ttlMs = 30_000) => (await log.client.acquireLease({ sessionId, holder, ttlMs })).lease!;
    const m = await acquire(mine, "h");
    // Expired, nobody took it: still renewable, as with RenewLease.
    const e = await acquire(expired, "h", 500);
    // Another holder's, after h's expired.
    await acquire(taken, "h", 500);
    // h's, but a newer epoch than the one the caller names (released and taken again).
    const n1 = await acquire(newer, "h");
    await log.client.releaseLease({ sessionId: newer, holder: "h", epoch: n1.epoch });
    const n2 = await acquire(newer, "h");
    // Released: nobody's.
    const r = await acquire(released, "h");
    await log.client.releaseLease({ sessionId: released, holder: "h", epoch: r.epoch });
    // Expired by the database's clock (a reader sees no lease then).
    await eventually(async () => ((await log.client.getSession({ sessionId: taken })).session?.lease === undefined ? true : undefined), "taken's lease to expire", 30_000);
    const t = await acquire(taken, "other");
    // Expired by the database's clock (a reader sees no lease then).
    await eventually(async () => ((await log.client.getSession({ sessionId: expired })).session?.lease === undefined ? true : undefined), "expired's lease to expire", 30_000);

    const before = Date.now();
    const { renewals } = await log.client.renewLeases({
      holder: "h",
      ttlMs: 20_000,
      leases: [
        { sessionId: mine, epoch: m.epoch },
        { sessionId: expired, epoch: e.epoch },
        { sessionId: taken, epoch: 1 },
        { sessionId: newer, epoch: n1.epoch },
        { sessionId: released, epoch: r.epoch },
        { sessionId: "sesn_nosuchsession", epoch: 1 },
      ],
    });
    expect(renewals.map((x) => [x.sessionId, x.outcome, x.lease?.epoch, x.currentEpoch])).toEqual([
      [mine, LeaseRenewal_Outcome.OUTCOME_RENEWED, m.epoch, 0],
      [expired, LeaseRenewal_Outcome.OUTCOME_RENEWED, e.epoch, 0],
      [taken, LeaseRenewal_Outcome.OUTCOME_ABORTED, undefined, t.epoch],
      [newer, LeaseRenewal_Outcome.OUTCOME_ABORTED, undefined, n2.epoch],
      // Free: no epoch's, as RenewLease says it.
      [released, LeaseRenewal_Outcome.OUTCOME_ABORTED, undefined, 0],
      ["sesn_nosuchsession", LeaseRenewal_Outcome.OUTCOME_NOT_FOUND, undefined, 0],
    ]);
    // Renewed for the TTL asked (by the database's clock, close to ours), and held as a reader sees it.
    for (const x of renewals.slice(0, 2)) expect(x.lease!.expiresAt!.getTime()).toBeGreaterThan(before + 15_000);
    for (const sessionId of [mine, expired]) {
      expect((await log.client.getSession({ sessionId })).session?.lease).toMatchObject({ holder: "h" });
    }
    // Not renewed: the other holder's lease is as it was.
    expect((await log.client.getSession({ sessionId: taken })).session?.lease).toMatchObject({ holder: "other", epoch: t.epoch });
    // The per-session RPC still answers as before.
    expect((await rejection(log.client.renewLease({ sessionId: taken, holder: "h", epoch: 1, ttlMs: 1000 }))).code).toBe("ABORTED");
  });

  it("refuses a bad request naming the field, and renews nothing", async () => {
    const sessionId = await newSession();
    const { lease } = await log.client.acquireLease({ sessionId, holder: "h", ttlMs: 30_000 });
    const expiresAt = lease!.expiresAt!.getTime();
    const twice = await rejection(log.client.renewLeases({ holder: "h", ttlMs: 60_000, leases: [{ sessionId, epoch: lease!.epoch }, { sessionId, epoch: lease!.epoch }] }));
    expect([twice.code, twice.field]).toEqual(["INVALID_ARGUMENT", "leases[1].session_id"]);
    const bad = await rejection(log.client.renewLeases({ holder: "h", ttlMs: 60_000, leases: [{ sessionId, epoch: lease!.epoch }, { sessionId: "nope", epoch: 1 }] }));
    expect([bad.code, bad.field]).toEqual(["INVALID_ARGUMENT", "leases[1].session_id"]);
    const ttl = await rejection(log.client.renewLeases({ holder: "h", ttlMs: 10, leases: [{ sessionId, epoch: lease!.epoch }] }));
    expect([ttl.code, ttl.field]).toEqual(["INVALID_ARGUMENT", "ttl_ms"]);
    const holder = await rejection(log.client.renewLeases({ holder: "", ttlMs: 60_000, leases: [{ sessionId, epoch: lease!.epoch }] }));
    expect([holder.code, holder.field]).toEqual(["INVALID_ARGUMENT", "holder"]);
    expect((await log.client.getSession({ sessionId })).session?.lease?.expiresAt?.getTime()).toBe(expiresAt);
    expect((await log.client.renewLeases({ holder: "h", ttlMs: 60_000, leases: [] })).renewals).toEqual([]);
  });
});
