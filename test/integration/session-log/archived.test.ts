/**
 * An archived session takes no more input (UpdateSessionRequest.archive, migrations/010): a
 * client's user.* event or system.message appended without a lease epoch is refused
 * (FAILED_PRECONDITION naming session_id), in the append's own transaction, so that no gateway
 * instance's send lands after the archive. What is not input still lands: the harness's appends
 * under its lease, others' events (the broker's), and an append that terminates the session (a
 * delete's interrupt and termination). Through the service (a request alone) and the batch
 * statement (several sessions in one call).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgDb } from "@metaharness/db";
import { newEvent } from "@metaharness/events";
import { APPEND_SQL, appendParams, EVENTS_CHANNEL, shardOf } from "@metaharness/session-log";
import { newSession, rejection, startTestLog, type TestLog } from "../../support/session-log.js";
import { agentMessage, userMessage } from "../../support/events.js";

let log: TestLog;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
});
afterAll(async () => {
  await log?.stop();
});

const archive = (sessionId: string) => log.client.updateSession({ sessionId, putRepositories: [], removeRepositories: [], agent: undefined, archive: true });

describe("an archived session", () => {
  it("refuses a client's input, naming the session, and takes the harness's appends and other events", async () => {
    const sessionId = await newSession(log.client);
    const early = userMessage("before");
    await log.client.emitEvents({ sessionId, events: [early] });
    const { lease } = await log.client.acquireLease({ sessionId, holder: "harness-archived-test", ttlMs: 60_000 });
    await archive(sessionId);
    // Idempotent.
    await archive(sessionId);

    for (const input of [userMessage("after"), newEvent("system.message", { content: [{ block: { $case: "text", value: { text: "note" } } }] })]) {
      const refused = await rejection(log.client.emitEvents({ sessionId, events: [input] }));
      expect(refused).toMatchObject({ code: "FAILED_PRECONDITION", field: "session_id" });
      expect(refused.message).toContain(sessionId);
    }
    // An append that landed before, sent again (its answer lost): answered as it was.
    expect((await log.client.emitEvents({ sessionId, events: [early] })).events.map((e) => e.seq)).toEqual([1]);
    // The harness finishing its turn, and an event that is not input (as the broker's are).
    await log.client.emitEvents({ sessionId, events: [agentMessage("answer")], leaseEpoch: lease!.epoch });
    await log.client.emitEvents({ sessionId, events: [newEvent("session.status_running", {})] });
    // A delete terminates it, its interrupt with it.
    await log.client.emitEvents({ sessionId, events: [newEvent("user.interrupt", {}), newEvent("session.status_terminated", {})] });
    const { events } = await log.client.getEvents({ sessionId, position: undefined, limit: 100, types: [] });
    expect(events.map((e) => e.type)).toEqual(["user.message", "agent.message", "session.status_running", "user.interrupt", "session.status_terminated"]);
    // Archiving a terminated session, which takes nothing anyway, answers it.
    expect((await archive(sessionId)).session?.sessionId).toBe(sessionId);
  });

  it("is refused per request in a batch of several sessions", async () => {
    const archived = await newSession(log.client);
    const open = await newSession(log.client);
    await archive(archived);
    const sessions = [archived, open, archived];
    const ids = sessions.map((_, i) => `sevt_archived_${Date.now()}_${i}`);
    const none = ids.map(() => null);
    const db = createPgDb(log.db.url, 1, () => undefined);
    try {
      const { rows } = await db.query<{ req: number; outcome: number }>(
        APPEND_SQL,
        appendParams({
          sessions,
          expected: none, epochs: none, shards: sessions.map(shardOf), counts: [1, 1, 1], ids,
          // Input to the archived session is refused (outcome 6); an event that is not input lands.
          types: ["user.message", "user.message", "agent.message"], statuses: none, awaiting: none, bodies: ids.map(() => Buffer.from("")),
          createdAt: new Date(), announce: { channel: EVENTS_CHANNEL, prefix: "test" },
        }),
      );
      expect(rows.map((r) => [r.req, r.outcome])).toEqual([[1, 6], [2, 0], [3, 0]]);
    } finally {
      await db.end();
    }
  });

  it("is unknown when the log has no such session", async () => {
    expect(await rejection(archive("sesn_nope"))).toMatchObject({ code: "NOT_FOUND", field: "session_id" });
  });
});
