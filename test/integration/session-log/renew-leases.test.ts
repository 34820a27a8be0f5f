/**
 * RenewLeases: one statement renews several of a holder's leases, each as RenewLease would:
 * renewed (even just after expiry while nobody took it), another holder's or a newer epoch
 * (ABORTED with the session's epoch now), no such session (NOT_FOUND); a bad request names its
 * field and renews nothing. And EmitEvents' lease_ttl_ms: once the events are in the log, the
 * lease of lease_epoch, while still held, runs that long from the append, shorter or longer than it
 * ran (a harness ends its turn so that its lease runs out with its linger); a lease given back is
 * left alone, and so is another session's in the same batch; a request without lease_epoch or
 * with a TTL out of bounds is refused naming lease_ttl_ms, and appends nothing. RenewLeases
 * locks its sessions' rows in the order of their ids, as an append batch does (mh_append): in
 * another order the two deadlocked under load, and Postgres broke the tie after its 1 s
 * deadlock_timeout by failing one of them.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LeaseRenewal_Outcome } from "@metaharness/proto";
import { newSession as newSessionOf, rejection, startTestLog, type TestLog } from "../../support/session-log.js";
import { eventually } from "../../support/eventually.js";
import { userMessage } from "../../support/events.js";

let log: TestLog;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
});
afterAll(async () => {
  await log?.stop();
});

const newSession = (): Promise<string> => newSessionOf(log.client);

describe("RenewLeases", () => {
  it("locks its sessions' rows in the order of their ids, as an append batch does, so the two cannot deadlock", async () => {
    const [x, y] = await Promise.all([newSession(), newSession()]);
    const [first, second] = [x, y].sort();
    const epochs = new Map<string, number>();
    for (const sessionId of [first!, second!]) epochs.set(sessionId, (await log.client.acquireLease({ sessionId, holder: "h", ttlMs: 30_000 })).lease!.epoch);
    const holding = new pg.Client({ connectionString: log.db.url });
    const probe = new pg.Client({ connectionString: log.db.url });
    await Promise.all([holding.connect(), probe.connect()]);
    try {
      // An append batch of both sessions locks `first` before it would lock `second`: here it holds `first`.
      await holding.query("BEGIN");
      await holding.query("SELECT 1 FROM sessions WHERE session_id = $1 FOR UPDATE", [first]);
      // Named in the other order, as a harness may name them.
      const renewing = log.client.renewLeases({ holder: "h", ttlMs: 20_000, leases: [second!, first!].map((sessionId) => ({ sessionId, epoch: epochs.get(sessionId)! })) });
      await eventually(
        async () => {
          const { rows } = await probe.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%renewed AS%'",
          );
          return rows[0]!.n > 0 ? true : undefined;
        },
        "the renewal to wait for the row the batch holds",
        20_000,
      );
      // While it waits for `first`, it holds nothing of `second`: the batch could take it next.
      await probe.query("BEGIN");
      const { rowCount } = await probe.query("SELECT 1 FROM sessions WHERE session_id = $1 FOR UPDATE NOWAIT", [second]);
      expect(rowCount).toBe(1);
      await probe.query("ROLLBACK");
      await holding.query("COMMIT");
      const { renewals } = await renewing;
      expect(renewals.map((r) => [r.sessionId, r.outcome])).toEqual([
        [second, LeaseRenewal_Outcome.OUTCOME_RENEWED],
        [first, LeaseRenewal_Outcome.OUTCOME_RENEWED],
      ]);
    } finally {
      await holding.query("ROLLBACK").catch(() => undefined);
      await Promise.all([holding.end(), probe.end()]);
    }
  });

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

const acquireFor = async (sessionId: string, ttlMs: number) => (await log.client.acquireLease({ sessionId, holder: "h", ttlMs })).lease!;
const leaseOf = async (sessionId: string) => (await log.client.getSession({ sessionId })).session?.lease;

describe("EmitEvents with lease_ttl_ms", () => {
  it("makes the lease run out that long after the append, and another holder takes it then at the next epoch", async () => {
    const sessionId = await newSession();
    const lease = await acquireFor(sessionId, 60_000);
    const before = Date.now();
    await log.client.emitEvents({ sessionId, events: [userMessage("hi")], leaseEpoch: lease.epoch, leaseTtlMs: 1_000 });
    const set = await leaseOf(sessionId);
    expect(set?.epoch).toBe(lease.epoch);
    // The database's clock; a generous bound for a loaded machine, far under the 60 s it had.
    expect(set!.expiresAt!.getTime()).toBeLessThan(before + 10_000);
    await eventually(async () => ((await leaseOf(sessionId)) === undefined ? true : undefined), "the lease to run out", 30_000);
    expect((await log.client.acquireLease({ sessionId, holder: "other", ttlMs: 5_000 })).lease?.epoch).toBe(lease.epoch + 1);
  });

  it("makes it run longer too, and leaves alone a lease given back and another session's in the same batch", async () => {
    const [longer, released, other] = await Promise.all([newSession(), newSession(), newSession()]);
    const l = await acquireFor(longer, 1_000);
    const r = await acquireFor(released, 60_000);
    await log.client.releaseLease({ sessionId: released, holder: "h", epoch: r.epoch });
    const o = await acquireFor(other, 60_000);
    const before = Date.now();
    // Together, so the appender may put them in one statement.
    await Promise.all([
      log.client.emitEvents({ sessionId: longer, events: [userMessage("a")], leaseEpoch: l.epoch, leaseTtlMs: 120_000 }),
      log.client.emitEvents({ sessionId: released, events: [userMessage("b")], leaseEpoch: r.epoch, leaseTtlMs: 120_000 }),
      log.client.emitEvents({ sessionId: other, events: [userMessage("c")], leaseEpoch: o.epoch }),
    ]);
    expect((await leaseOf(longer))!.expiresAt!.getTime()).toBeGreaterThan(before + 60_000);
    expect(await leaseOf(released)).toBeUndefined();
    expect((await leaseOf(other))!.expiresAt!.getTime()).toBeLessThan(before + 61_000);
  });

  it("refuses a TTL without lease_epoch or out of bounds, naming lease_ttl_ms, and appends nothing", async () => {
    const sessionId = await newSession();
    const lease = await acquireFor(sessionId, 60_000);
    for (const req of [{ leaseTtlMs: 1_000 }, { leaseEpoch: lease.epoch, leaseTtlMs: 100 }, { leaseEpoch: lease.epoch, leaseTtlMs: 600_001 }]) {
      const err = await rejection(log.client.emitEvents({ sessionId, events: [userMessage("no")], ...req }));
      expect([err.code, err.field]).toEqual(["INVALID_ARGUMENT", "lease_ttl_ms"]);
    }
    expect((await log.client.getSession({ sessionId })).session?.lastSeq).toBe(0);
  });
});
