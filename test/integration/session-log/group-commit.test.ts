/**
 * Concurrent appends are written together (group commit, store/appender.ts): many calls share a
 * statement and a transaction, yet each keeps its own outcome. A call's conflict or missing
 * session fails that call only; a retry racing its original in the same batch appends once; and
 * every appended event has its outbox row.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import { SessionStatus } from "@metaharness/proto";
import { newSession as newSessionOf, rejection, startTestLog, type TestLog } from "../../support/session-log.js";
import { agentMessage, userMessage } from "../../support/events.js";

let log: TestLog;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
});
afterAll(async () => {
  await log?.stop();
});

const newSession = (): Promise<string> => newSessionOf(log.client);

describe("group commit", () => {
  it("gives each of many concurrent appends its own outcome", async () => {
    const good = await Promise.all(Array.from({ length: 12 }, newSession));
    const [terminated, leased, behind, repeated, running] = await Promise.all(Array.from({ length: 5 }, newSession));
    await log.client.emitEvent({ sessionId: terminated!, event: newEvent("session.status_terminated", {}) });
    await log.client.acquireLease({ sessionId: leased!, holder: "h", ttlMs: 60_000 });
    await log.client.emitEvent({ sessionId: behind!, event: userMessage("first") });
    const original = await log.client.emitEvent({ sessionId: repeated!, event: userMessage("original", "same-id") });

    // Everything at once, so the calls share batches; the good ones before, between and after.
    const calls = {
      good: good.flatMap((sessionId) => [0, 1, 2].map((i) => log.client.emitEvent({ sessionId, event: agentMessage(`m${i}`) }))),
      terminated: rejection(log.client.emitEvent({ sessionId: terminated!, event: userMessage("late") })),
      stale: rejection(log.client.emitEvent({ sessionId: leased!, event: agentMessage("x"), leaseEpoch: 7 })),
      behind: rejection(log.client.emitEvent({ sessionId: behind!, event: userMessage("second"), expectedSeq: 0 })),
      missing: rejection(log.client.emitEvent({ sessionId: "sesn_missing", event: userMessage("nobody") })),
      repeated: log.client.emitEvent({ sessionId: repeated!, event: userMessage("changed", "same-id") }),
      running: log.client.emitEvents({
        sessionId: running!,
        events: [userMessage("go"), newEvent("session.status_running", {}), agentMessage("working")],
      }),
    };

    const appended = await Promise.all(calls.good);
    expect((await calls.terminated).code).toBe("FAILED_PRECONDITION");
    const stale = await calls.stale;
    expect([stale.code, stale.field]).toEqual(["ABORTED", "lease_epoch"]);
    const behindErr = await calls.behind;
    expect([behindErr.code, behindErr.field]).toEqual(["FAILED_PRECONDITION", "expected_seq"]);
    expect(behindErr.message).toContain("is at seq 1");
    expect((await calls.missing).code).toBe("NOT_FOUND");
    const again = await calls.repeated;
    expect([again.duplicate, again.event?.seq]).toEqual([true, original.event?.seq]);
    expect((await calls.running).events.map((e) => e.seq)).toEqual([1, 2, 3]);

    for (const sessionId of good) {
      const mine = appended.filter((r) => r.event?.sessionId === sessionId);
      expect(mine.map((r) => r.event?.seq).sort()).toEqual([1, 2, 3]);
      const { events, lastSeq } = await log.client.getEvents({ sessionId, position: undefined, limit: 0, types: [] });
      expect([lastSeq, events.map((e) => e.seq)]).toEqual([3, [1, 2, 3]]);
    }
    const head = async (sessionId: string) => (await log.client.getSession({ sessionId })).session;
    expect((await head(terminated!))?.lastSeq).toBe(1);
    expect((await head(leased!))?.lastSeq).toBe(0);
    expect((await head(behind!))?.lastSeq).toBe(1);
    expect((await head(repeated!))?.lastSeq).toBe(1);
    expect((await head(running!))?.status).toBe(SessionStatus.SESSION_STATUS_RUNNING);
  });

  it("appends once when a retry races its original", async () => {
    const sessionId = await newSession();
    const results = await Promise.all(
      Array.from({ length: 8 }, () => log.client.emitEvent({ sessionId, event: userMessage("once", "retried-id") })),
    );
    expect(new Set(results.map((r) => r.event?.seq))).toEqual(new Set([1]));
    expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
    const { lastSeq } = await log.client.getEvents({ sessionId, position: undefined, limit: 0, types: [] });
    expect(lastSeq).toBe(1);
  });

  it("queues exactly one outbox row per appended event", async () => {
    const sessions = await Promise.all(Array.from({ length: 6 }, newSession));
    await Promise.all(
      sessions.flatMap((sessionId) => [
        log.client.emitEvent({ sessionId, event: userMessage("a", "k-a") }),
        log.client.emitEvent({ sessionId, event: userMessage("a again", "k-a") }),
        log.client.emitEvents({ sessionId, events: [agentMessage("b"), agentMessage("c")] }),
      ]),
    );
    const { rows } = await log.handle.db.query<{ session_id: string; seqs: string[] }>(
      "SELECT session_id, array_agg(seq ORDER BY seq)::text[] AS seqs FROM outbox WHERE session_id = ANY($1) GROUP BY session_id",
      [sessions],
    );
    expect(rows).toHaveLength(sessions.length);
    for (const row of rows) expect(row.seqs).toEqual(["1", "2", "3"]);
  });
});
