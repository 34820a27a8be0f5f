/**
 * An append's answer says how long the session's lease has left once its events are in the log
 * (EmitEventsResponse.lease_left_ms, migrations/009), read in the append's own transaction: the
 * gateway skips its Wake by it. Through the service (a request alone, the per-request function),
 * through the batch statement (several sessions in one call, each its own lease, a refused
 * request none), for an append that sets its lease (the time it set), and the previous release's
 * statements, which still append and set leases as they did while this one rolls out.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgDb } from "@metaharness/db";
import { APPEND_SQL, appendParams, EVENTS_CHANNEL, shardOf } from "@metaharness/session-log";
import { newSession, startTestLog, type TestLog } from "../../support/session-log.js";
import { agentMessage, userMessage } from "../../support/events.js";

let log: TestLog;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
});
afterAll(async () => {
  await log?.stop();
});

const TTL_MS = 60_000;
const HOLDER = "harness-lease-left-test";

/** A session whose lease HOLDER took for TTL_MS (epoch 1). */
async function leased(): Promise<{ sessionId: string; epoch: number }> {
  const sessionId = await newSession(log.client);
  const { lease } = await log.client.acquireLease({ sessionId, holder: HOLDER, ttlMs: TTL_MS });
  return { sessionId, epoch: lease!.epoch };
}

const leaseOf = async (sessionId: string) => (await log.client.getSession({ sessionId })).session?.lease;

describe("an append's answer", () => {
  it("carries the lease's time left: a client's input to a leased session, and none without a lease", async () => {
    const { sessionId } = await leased();
    const before = Date.now();
    const res = await log.client.emitEvents({ sessionId, events: [userMessage("hi")] });
    // At most the TTL, and no less than what is left of it by the time the answer came back.
    expect(res.leaseLeftMs).toBeLessThanOrEqual(TTL_MS);
    expect(res.leaseLeftMs).toBeGreaterThanOrEqual(TTL_MS - (Date.now() - before) - 5_000);

    const free = await newSession(log.client);
    expect((await log.client.emitEvents({ sessionId: free, events: [userMessage("hi")] })).leaseLeftMs).toBe(0);
  });

  it("is 0 once the lease was given back, and the time it set when the append sets it", async () => {
    const { sessionId, epoch } = await leased();
    const set = await log.client.emitEvents({ sessionId, events: [agentMessage("done")], leaseEpoch: epoch, leaseTtlMs: 2_500 });
    expect(set.leaseLeftMs).toBeLessThanOrEqual(2_500);
    expect(set.leaseLeftMs).toBeGreaterThan(0);
    const expiresAt = (await leaseOf(sessionId))?.expiresAt?.getTime() ?? 0;
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(2_500 + 1_000);

    await log.client.releaseLease({ sessionId, holder: HOLDER, epoch });
    expect((await log.client.emitEvents({ sessionId, events: [userMessage("again")] })).leaseLeftMs).toBe(0);
  });

  it("is per request in a batch of several sessions, and none for a refused request", async () => {
    const a = await leased();
    const b = await newSession(log.client);
    const c = await leased();
    const sessions = [a.sessionId, b, c.sessionId];
    const ids = sessions.map((_, i) => `sevt_lease_left_${Date.now()}_${i}`);
    const none = ids.map(() => null);
    const db = createPgDb(log.db.url, 1, () => undefined);
    try {
      const { rows } = await db.query<{ req: number; outcome: number; lease_ms: string | null }>(
        APPEND_SQL,
        appendParams({
          sessions,
          // The third expects a seq its session is not at: refused (outcome 3).
          expected: [null, null, 7], epochs: [null, null, null], shards: sessions.map(shardOf), counts: [1, 1, 1], ids,
          types: ids.map(() => "user.message"), statuses: none, awaiting: none, bodies: ids.map(() => Buffer.from("")),
          createdAt: new Date(), announce: { channel: EVENTS_CHANNEL, prefix: "test" },
        }),
      );
      expect(rows.map((r) => [r.req, r.outcome])).toEqual([[1, 0], [2, 0], [3, 3]]);
      expect(Number(rows[0]!.lease_ms)).toBeGreaterThan(TTL_MS - 30_000);
      expect(Number(rows[0]!.lease_ms)).toBeLessThanOrEqual(TTL_MS);
      expect(rows[1]!.lease_ms).toBeNull();
      expect(rows[2]!.lease_ms).toBeNull();
    } finally {
      await db.end();
    }
  });

  it("the previous release's statements (five columns) still append, and set a lease", async () => {
    const { sessionId, epoch } = await leased();
    const db = createPgDb(log.db.url, 1, () => undefined);
    try {
      const previous = APPEND_SQL.replaceAll(", lease_ms", "");
      const statements = [
        previous.replace("mh_append_v2(", "mh_append("),
        previous.replace("mh_append_v2(", "mh_append_serial("),
        previous.replace("mh_append_v2(", "mh_append_lease(").replace("$14::bigint)", "$14::bigint, $15::int[])"),
      ];
      for (const [i, sql] of statements.entries()) {
        const id = `sevt_previous_${Date.now()}_${i}`;
        const params = appendParams({
          sessions: [sessionId], expected: [null], epochs: [epoch], shards: [shardOf(sessionId)], counts: [1], ids: [id],
          types: ["agent.message"], statuses: [null], awaiting: [null], bodies: [Buffer.from("")], createdAt: new Date(),
          announce: { channel: EVENTS_CHANNEL, prefix: "test" },
        });
        if (sql.includes("$15")) params.push([1_000]);
        const { rows } = await db.query<{ outcome: number; seq: string }>(sql, params);
        expect(Object.keys(rows[0] ?? {})).toEqual(["req", "outcome", "seq", "cur", "body"]);
        expect(rows.map((r) => [r.outcome, Number(r.seq)])).toEqual([[0, i + 1]]);
      }
      // The last one set the lease to run out a second from it (it had a minute).
      const expiresAt = (await leaseOf(sessionId))?.expiresAt?.getTime() ?? 0;
      expect(expiresAt - Date.now()).toBeLessThanOrEqual(1_000 + 1_000);
    } finally {
      await db.end();
    }
  });
});
