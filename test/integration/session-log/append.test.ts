/**
 * Appending against the real Postgres: idempotency, atomic batches, optimistic concurrency from
 * parallel writers, and dense per-session seqs. Concurrent appends are written together (group
 * commit, store/appender.ts), yet each keeps its own outcome: a call's conflict or missing session
 * fails that call only, a retry racing its original in the same batch appends once, and every
 * appended event has its outbox row.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MhError } from "@metaharness/errors";
import { newEvent } from "@metaharness/events";
import pg from "pg";
import { Event, SessionStatus } from "@metaharness/proto";
import { newSession as newSessionOf, rejection, startTestLog, type TestLog } from "../../support/session-log.js";
import { agentMessage, textOf, userMessage } from "../../support/events.js";

let log: TestLog;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
});
afterAll(async () => {
  await log?.stop();
});

const newSession = (): Promise<string> => newSessionOf(log.client);


describe("EmitEvent", () => {
  it("assigns dense 1-based seqs, created_at and the session id", async () => {
    const sessionId = await newSession();
    const a = await log.client.emitEvent({ sessionId, event: userMessage("hello") });
    const b = await log.client.emitEvent({ sessionId, event: agentMessage("hi") });
    expect(a.event?.seq).toBe(1);
    expect(b.event?.seq).toBe(2);
    expect(b.event?.sessionId).toBe(sessionId);
    expect(b.event?.type).toBe("agent.message");
    expect(b.event?.id).toMatch(/^sevt_/);
    expect(b.event?.createdAt).toBeInstanceOf(Date);
    const { session } = await log.client.getSession({ sessionId });
    expect(session?.lastSeq).toBe(2);
  });

  it("stores what it answers: a writer's own seq and created_at give way to the log's", async () => {
    const sessionId = await newSession();
    // Sub-millisecond nanos are what a merge of two created_at messages would keep from the writer's.
    const theirs = { ...userMessage("stamped by the writer"), seq: 99, sessionId, createdAt: new Date(Date.UTC(2001, 0, 1, 0, 0, 0, 123)) };
    const { event: answered } = await log.client.emitEvent({ sessionId, event: theirs });
    const [listed] = (await log.client.getEvents({ sessionId, position: undefined, limit: 0, types: [] })).events;
    const db = new pg.Client({ connectionString: log.db.url });
    await db.connect();
    try {
      const { rows } = await db.query<{ body: Buffer }>("SELECT body FROM events WHERE session_id = $1", [sessionId]);
      const stored = Event.decode(rows[0]?.body ?? new Uint8Array());
      expect([answered?.seq, answered?.sessionId]).toEqual([1, sessionId]);
      expect(answered?.createdAt?.getUTCFullYear()).toBeGreaterThan(2001);
      expect(listed).toEqual(answered);
      expect(stored).toEqual(answered);
    } finally {
      await db.end();
    }
  });

  it("returns the first append for a repeated event id and writes nothing", async () => {
    const sessionId = await newSession();
    const first = await log.client.emitEvent({ sessionId, event: userMessage("once", "client-key-1") });
    await log.client.emitEvent({ sessionId, event: agentMessage("between") });
    const again = await log.client.emitEvent({ sessionId, event: userMessage("changed text", "client-key-1") });
    expect(again.duplicate).toBe(true);
    expect(again.event?.seq).toBe(first.event?.seq);
    expect(textOf(again.event)).toBe("once");
    const { events } = await log.client.getEvents({ sessionId, position: undefined, limit: 0, types: [] });
    expect(events.map((e) => e.seq)).toEqual([1, 2]);
  });

  it("rejects a stale expected_seq with FAILED_PRECONDITION naming the current seq", async () => {
    const sessionId = await newSession();
    await log.client.emitEvent({ sessionId, event: userMessage("1"), expectedSeq: 0 });
    const err = await rejection(log.client.emitEvent({ sessionId, event: userMessage("2"), expectedSeq: 0 }));
    expect(err.code).toBe("FAILED_PRECONDITION");
    expect(err.message).toContain("is at seq 1");
    expect(err.field).toBe("expected_seq");
  });

  it("lets exactly one of many parallel writers win each expected_seq", async () => {
    const sessionId = await newSession();
    const writers = 16;
    const rounds = 5;
    for (let round = 0; round < rounds; round++) {
      const results = await Promise.allSettled(
        Array.from({ length: writers }, (_, w) =>
          log.client.emitEvent({ sessionId, event: userMessage(`r${round}w${w}`), expectedSeq: round }),
        ),
      );
      const won = results.filter((r) => r.status === "fulfilled");
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
      expect(won).toHaveLength(1);
      expect(lost.every((r) => (r.reason as MhError).code === "FAILED_PRECONDITION")).toBe(true);
    }
    const { session } = await log.client.getSession({ sessionId });
    expect(session?.lastSeq).toBe(rounds);
  });

  it("keeps seqs dense under parallel appends to one session and to many", async () => {
    const sessions = await Promise.all([newSession(), newSession(), newSession()]);
    await Promise.all(
      sessions.flatMap((sessionId) =>
        Array.from({ length: 40 }, (_, i) => log.client.emitEvent({ sessionId, event: userMessage(`m${i}`) })),
      ),
    );
    for (const sessionId of sessions) {
      const { events, lastSeq } = await log.client.getEvents({ sessionId, position: undefined, limit: 1000, types: [] });
      expect(lastSeq).toBe(40);
      expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      expect(new Set(events.map((e) => textOf(e))).size).toBe(40);
    }
  });
});

describe("EmitEvents", () => {
  it("appends a batch atomically and in order", async () => {
    const sessionId = await newSession();
    const { events } = await log.client.emitEvents({
      sessionId,
      events: [userMessage("a"), agentMessage("b"), agentMessage("c")],
    });
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(events.map(textOf)).toEqual(["a", "b", "c"]);
  });

  it("writes nothing when one event of the batch is invalid", async () => {
    const sessionId = await newSession();
    await log.client.emitEvent({ sessionId, event: userMessage("before") });
    const bad = newEvent("agent.tool_use", { name: "", input: {}, evaluatedPermission: 0, sandboxId: "" });
    const err = await rejection(
      log.client.emitEvents({ sessionId, events: [userMessage("x"), bad, userMessage("y")] }),
    );
    expect(err.code).toBe("INVALID_ARGUMENT");
    expect(err.field).toBe("events[1].payload.agent_tool_use.name");
    const { session } = await log.client.getSession({ sessionId });
    expect(session?.lastSeq).toBe(1);
  });

  it("writes the new events of a partly repeated batch and returns the old ones as they were", async () => {
    const sessionId = await newSession();
    await log.client.emitEvents({ sessionId, events: [userMessage("a", "k-a"), userMessage("b", "k-b")] });
    const { events, duplicates } = await log.client.emitEvents({
      sessionId,
      events: [userMessage("a", "k-a"), userMessage("c", "k-c")],
    });
    expect(duplicates).toBe(1);
    expect(events.map((e) => [e.id, e.seq])).toEqual([
      ["k-a", 1],
      ["k-c", 3],
    ]);
  });

  it("refuses a batch that repeats an id, naming both places", async () => {
    const sessionId = await newSession();
    const err = await rejection(
      log.client.emitEvents({ sessionId, events: [userMessage("a", "same"), userMessage("b", "same")] }),
    );
    expect(err.field).toBe("events[1].id");
    expect(err.message).toContain("events[0]");
  });
});

describe("terminated sessions", () => {
  it("accept nothing more after session.status_terminated", async () => {
    const sessionId = await newSession();
    await log.client.emitEvent({ sessionId, event: newEvent("session.status_terminated", {}) });
    const { session } = await log.client.getSession({ sessionId });
    expect(session?.status).toBe(3);
    const err = await rejection(log.client.emitEvent({ sessionId, event: userMessage("late") }));
    expect(err.code).toBe("FAILED_PRECONDITION");
  });

  it("refuse a batch with events after its session.status_terminated, and write none of it", async () => {
    const sessionId = await newSession();
    const err = await rejection(
      log.client.emitEvents({ sessionId, events: [userMessage("a"), newEvent("session.status_terminated", {}), userMessage("late")] }),
    );
    expect(err).toMatchObject({ code: "INVALID_ARGUMENT", field: "events[2]" });
    const { session } = await log.client.getSession({ sessionId });
    expect(session).toMatchObject({ lastSeq: 0, status: 1 });
  });
});

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
