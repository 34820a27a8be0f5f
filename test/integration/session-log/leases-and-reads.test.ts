/**
 * Leases fence writers; positional slices read forward and backward; bad requests get a clear
 * error naming the field and change nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import { Event, StopReasonType } from "@metaharness/proto";
import pg from "pg";
import { APPEND_SERIAL_SQL, appendParams, EVENTS_CHANNEL, shardOf } from "@metaharness/session-log";
import { newSession as newSessionOf, rejection, startTestLog, type TestLog } from "../../support/session-log.js";
import { eventually } from "../../support/eventually.js";
import { agentMessage, userMessage } from "../../support/events.js";

let log: TestLog;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false", MH_MAX_PAYLOAD_BYTES: "4096" });
});
afterAll(async () => {
  await log?.stop();
});

const newSession = (): Promise<string> => newSessionOf(log.client);


describe("leases", () => {
  it("fence a harness presumed dead once its successor takes over", async () => {
    const sessionId = await newSession();
    // 3 s: the four calls below must find it held (with 1 s, a busy machine could let it lapse first).
    const a = await log.client.acquireLease({ sessionId, holder: "harness-a", ttlMs: 3000 });
    expect(a.lease?.epoch).toBe(1);
    await log.client.emitEvent({ sessionId, event: agentMessage("a writes"), leaseEpoch: 1 });

    const busy = await rejection(log.client.acquireLease({ sessionId, holder: "harness-b", ttlMs: 1000 }));
    expect(busy.code).toBe("FAILED_PRECONDITION");
    expect(busy.field).toBe("holder");
    expect(busy.message).toContain("harness-a");
    expect(busy.details).toMatchObject({ holder: "harness-a", epoch: 1 });
    expect((await log.client.getSession({ sessionId })).session?.lease?.holder).toBe("harness-a");

    // A fixed wait on purpose: the lease expiring with time is what is tested.
    await new Promise((r) => setTimeout(r, 3100));
    // Expired: no one's, as a reader sees it.
    expect((await log.client.getSession({ sessionId })).session?.lease).toBeUndefined();
    const b = await log.client.acquireLease({ sessionId, holder: "harness-b", ttlMs: 5000 });
    expect(b.lease?.epoch).toBe(2);

    const stale = await rejection(log.client.emitEvent({ sessionId, event: agentMessage("a again"), leaseEpoch: 1 }));
    expect(stale.code).toBe("ABORTED");
    expect(stale.field).toBe("lease_epoch");
    const renew = await rejection(log.client.renewLease({ sessionId, holder: "harness-a", epoch: 1, ttlMs: 1000 }));
    expect(renew.code).toBe("ABORTED");

    await log.client.emitEvent({ sessionId, event: agentMessage("b writes"), leaseEpoch: 2 });
    const renewed = await log.client.renewLease({ sessionId, holder: "harness-b", epoch: 2, ttlMs: 5000 });
    expect(renewed.lease?.epoch).toBe(2);
    await log.client.releaseLease({ sessionId, holder: "harness-b", epoch: 2 });
    expect((await log.client.getSession({ sessionId })).session?.lease).toBeUndefined();
    const c = await log.client.acquireLease({ sessionId, holder: "harness-c", ttlMs: 5000 });
    expect(c.lease?.epoch).toBe(3);
  });

  it("re-acquiring an unexpired lease by its holder keeps the epoch", async () => {
    const sessionId = await newSession();
    const first = await log.client.acquireLease({ sessionId, holder: "h", ttlMs: 5000 });
    const again = await log.client.acquireLease({ sessionId, holder: "h", ttlMs: 5000 });
    expect(again.lease?.epoch).toBe(first.lease?.epoch);
  });

  it("are refused for a terminated session, naming session_id, whoever asks", async () => {
    const sessionId = await newSession();
    const { lease } = await log.client.acquireLease({ sessionId, holder: "h", ttlMs: 5000 });
    await log.client.emitEvent({ sessionId, event: newEvent("session.status_terminated", {}), leaseEpoch: lease!.epoch });
    const refused = async (): Promise<void> => {
      for (const holder of ["h", "other"]) {
        const err = await rejection(log.client.acquireLease({ sessionId, holder, ttlMs: 5000 }));
        expect(err).toMatchObject({ code: "FAILED_PRECONDITION", field: "session_id" });
        expect(err.message).toContain("terminated");
      }
    };
    await refused();
    expect((await log.client.getSession({ sessionId })).session?.lease).toMatchObject({ holder: "h", epoch: lease!.epoch });
    await log.client.releaseLease({ sessionId, holder: "h", epoch: lease!.epoch });
    await refused();
    expect((await log.client.getSession({ sessionId })).session?.lease).toBeUndefined();
  });

  it("come with a short session's events, read in the lease's statement or, when an append lands while it waits, after it", async () => {
    const sessionId = await newSession();
    await log.client.emitEvents({ sessionId, events: [userMessage("one"), agentMessage("two")] });
    const a = await log.client.acquireLease({ sessionId, holder: "h", ttlMs: 60_000 });
    expect(a.session?.lastSeq).toBe(2);
    expect(a.events.map((e) => e.seq)).toEqual([1, 2]);

    // An append holds the session's row while the next acquire comes: the acquire waits for it,
    // its statement's snapshot misses the append, and the events are read again after the lease.
    // Two connections: the append's transaction, and the look at the locks.
    const pool = new pg.Pool({ connectionString: log.db.url, max: 2 });
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const body = Buffer.from(Event.encode(agentMessage("three")).finish());
      const params = appendParams({
        sessions: [sessionId], expected: [null], epochs: [a.lease!.epoch], shards: [shardOf(sessionId)], counts: [1],
        ids: ["sevt_lease_race"], types: ["agent.message"], statuses: [null], awaiting: [null], bodies: [body],
        createdAt: new Date(), announce: { channel: EVENTS_CHANNEL, prefix: "test" },
      });
      await client.query(APPEND_SERIAL_SQL, params);
      const taking = log.client.acquireLease({ sessionId, holder: "h", ttlMs: 60_000 });
      await eventually(async () => {
        const { rows } = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted");
        return (rows[0]?.n ?? 0) > 0 ? true : undefined;
      }, "the acquire to wait for the append's row lock").catch(async (err: unknown) => {
        await client.query("ROLLBACK");
        throw err;
      });
      await client.query("COMMIT");
      const b = await taking;
      expect(b.lease?.epoch).toBe(a.lease?.epoch);
      expect(b.session?.lastSeq).toBe(3);
      expect(b.events.map((e) => e.seq)).toEqual([1, 2, 3]);
    } finally {
      client.release();
      await pool.end();
    }
  });

  it("come without events for a session of more than 100", async () => {
    const sessionId = await newSession();
    await log.client.emitEvents({ sessionId, events: Array.from({ length: 101 }, (_, i) => agentMessage(`${i}`)) });
    const a = await log.client.acquireLease({ sessionId, holder: "h", ttlMs: 60_000 });
    expect(a.session?.lastSeq).toBe(101);
    expect(a.events).toEqual([]);
  });

  it("rejects a ttl out of bounds, naming it", async () => {
    const sessionId = await newSession();
    const err = await rejection(log.client.acquireLease({ sessionId, holder: "h", ttlMs: 10 }));
    expect(err.code).toBe("INVALID_ARGUMENT");
    expect(err.field).toBe("ttl_ms");
  });
});

describe("GetEvents slices", () => {
  let sessionId: string;
  beforeAll(async () => {
    sessionId = await newSession();
    const events: Event[] = [];
    for (let i = 1; i <= 50; i++) events.push(i % 5 === 0 ? agentMessage(`a${i}`) : userMessage(`u${i}`));
    await log.client.emitEvents({ sessionId, events });
  });

  it("reads forward after a seq (resume)", async () => {
    const r = await log.client.getEvents({ sessionId, position: { $case: "afterSeq", value: 10 }, limit: 5, types: [] });
    expect(r.events.map((e) => e.seq)).toEqual([11, 12, 13, 14, 15]);
    expect(r.hasMore).toBe(true);
    expect(r.lastSeq).toBe(50);
  });

  it("reads backward before a seq, in ascending order (rewind)", async () => {
    const r = await log.client.getEvents({ sessionId, position: { $case: "beforeSeq", value: 20 }, limit: 3, types: [] });
    expect(r.events.map((e) => e.seq)).toEqual([17, 18, 19]);
    expect(r.hasMore).toBe(true);
    const start = await log.client.getEvents({ sessionId, position: { $case: "beforeSeq", value: 3 }, limit: 10, types: [] });
    expect(start.events.map((e) => e.seq)).toEqual([1, 2]);
    expect(start.hasMore).toBe(false);
  });

  it("filters by type both ways", async () => {
    const fwd = await log.client.getEvents({ sessionId, position: undefined, limit: 3, types: ["agent.message"] });
    expect(fwd.events.map((e) => e.seq)).toEqual([5, 10, 15]);
    const back = await log.client.getEvents({
      sessionId,
      position: { $case: "beforeSeq", value: 50 },
      limit: 2,
      types: ["agent.message"],
    });
    expect(back.events.map((e) => e.seq)).toEqual([40, 45]);
  });

  it("returns an empty slice past the end", async () => {
    const r = await log.client.getEvents({ sessionId, position: { $case: "afterSeq", value: 50 }, limit: 10, types: [] });
    expect(r.events).toEqual([]);
    expect(r.hasMore).toBe(false);
  });
});

describe("bad input", () => {
  it("names the field and stores nothing", async () => {
    const sessionId = await newSession();
    await log.client.emitEvent({ sessionId, event: userMessage("kept") });
    const cases: Array<[() => Promise<unknown>, string, string]> = [
      [() => log.client.getSession({ sessionId: "sesn_nope" }), "NOT_FOUND", "session_id"],
      [() => log.client.emitEvent({ sessionId: "sesn_nope", event: userMessage("x") }), "NOT_FOUND", "session_id"],
      [() => log.client.emitEvent({ sessionId: "", event: userMessage("x") }), "INVALID_ARGUMENT", "session_id"],
      [() => log.client.emitEvent({ sessionId, event: undefined }), "INVALID_ARGUMENT", "event"],
      [
        () => log.client.emitEvent({ sessionId, event: { ...userMessage("x"), type: "user.shout" } }),
        "INVALID_ARGUMENT",
        "event.type",
      ],
      [
        () => log.client.emitEvent({ sessionId, event: { ...userMessage("x"), payload: undefined, type: "" } }),
        "INVALID_ARGUMENT",
        "event.payload",
      ],
      [() => log.client.emitEvent({ sessionId, event: userMessage("x".repeat(5000)) }), "INVALID_ARGUMENT", "event.payload"],
      [
        () => log.client.emitEvent({ sessionId, event: { ...userMessage("x"), sessionId: "sesn_other" } }),
        "INVALID_ARGUMENT",
        "event.session_id",
      ],
      [
        () => log.client.emitEvent({ sessionId, event: newEvent("session.status_idle", { stopReason: undefined }) }),
        "INVALID_ARGUMENT",
        "event.payload.session_status_idle.stop_reason",
      ],
      [() => log.client.getEvents({ sessionId, position: undefined, limit: 5000, types: [] }), "INVALID_ARGUMENT", "limit"],
      [
        () => log.client.getEvents({ sessionId, position: undefined, limit: 1, types: ["nope"] }),
        "INVALID_ARGUMENT",
        "types[0]",
      ],
      [
        () => log.client.getEvents({ sessionId, position: { $case: "beforeSeq", value: 0 }, limit: 1, types: [] }),
        "INVALID_ARGUMENT",
        "before_seq",
      ],
      [() => log.client.createSession({ sessionId: "bad id", metadata: undefined }), "INVALID_ARGUMENT", "session_id"],
      [() => log.client.createSession({ sessionId, metadata: undefined }), "ALREADY_EXISTS", "session_id"],
      [
        () => log.client.listSessions({ pageSize: 1, pageToken: "garbage", tenant: "", status: 0, labels: {}, orphaned: false }),
        "INVALID_ARGUMENT",
        "page_token",
      ],
      [
        // Nineteen digits, but above the largest bigint: was a Postgres error answered INTERNAL.
        () =>
          log.client.listSessions({ pageSize: 1, pageToken: Buffer.from("o:9999999999999999999").toString("base64url"), tenant: "", status: 0, labels: {}, orphaned: false }),
        "INVALID_ARGUMENT",
        "page_token",
      ],
    ];
    for (const [call, code, field] of cases) {
      const err = await rejection(call());
      expect([err.code, err.field], err.message).toEqual([code, field]);
      expect(err.message.length).toBeGreaterThan(10);
    }
    const { lastSeq } = await log.client.getEvents({ sessionId, position: undefined, limit: 10, types: [] });
    expect(lastSeq).toBe(1);
  });
});

describe("orphaned sessions", () => {
  it("lists sessions that need a harness and have no live lease", async () => {
    const tenant = `orphans-${Date.now()}`;
    const { session } = await log.client.createSession({
      sessionId: "",
      metadata: { workspaceFork: undefined, agentId: "", agentVersion: 0, tenant, labels: {}, harness: "", environmentId: "", vaultIds: [], title: "", agent: undefined, environment: undefined, repositories: [] },
    });
    const sessionId = session!.sessionId;
    const orphans = async (): Promise<string[]> =>
      (await log.client.listSessions({ pageSize: 10, pageToken: "", tenant, status: 0, labels: {}, orphaned: true })).sessions.map(
        (s) => s.sessionId,
      );
    expect(await orphans()).toEqual([]);
    await log.client.emitEvent({ sessionId, event: userMessage("anyone?") });
    expect(await orphans()).toEqual([sessionId]);
    const { lease } = await log.client.acquireLease({ sessionId, holder: "h", ttlMs: 5000 });
    expect(await orphans()).toEqual([]);
    await log.client.emitEvent({ sessionId, event: newEvent("session.status_running", {}), leaseEpoch: lease!.epoch });
    await log.client.releaseLease({ sessionId, holder: "h", epoch: lease!.epoch });
    expect(await orphans()).toEqual([sessionId]);
    await log.client.emitEvent({
      sessionId,
      event: newEvent("session.status_idle", { stopReason: { type: StopReasonType.STOP_REASON_TYPE_END_TURN, eventIds: [] } }),
    });
    expect(await orphans()).toEqual([]);
  });
});

describe("ListSessions", () => {
  it("pages newest first and filters by tenant, status and labels", async () => {
    const tenant = `t-${Date.now()}`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { session } = await log.client.createSession({
        sessionId: "",
        metadata: { workspaceFork: undefined,
          agentId: "agent_1",
          agentVersion: 1,
          tenant,
          labels: { team: i % 2 === 0 ? "red" : "blue" },
          harness: "tool-loop",
          environmentId: "",
          vaultIds: [],
          title: `s${i}`,
          agent: undefined,
          environment: undefined,
          repositories: [],
        },
      });
      ids.push(session!.sessionId);
    }
    await log.client.emitEvent({ sessionId: ids[4]!, event: newEvent("session.status_running", {}) });

    const page1 = await log.client.listSessions({ pageSize: 2, pageToken: "", tenant, status: 0, labels: {}, orphaned: false });
    const page2 = await log.client.listSessions({ pageSize: 2, pageToken: page1.nextPageToken, tenant, status: 0, labels: {}, orphaned: false });
    const page3 = await log.client.listSessions({ pageSize: 2, pageToken: page2.nextPageToken, tenant, status: 0, labels: {}, orphaned: false });
    expect([...page1.sessions, ...page2.sessions, ...page3.sessions].map((s) => s.sessionId)).toEqual([...ids].reverse());
    expect(page3.nextPageToken).toBe("");
    expect(page1.sessions[0]?.metadata?.title).toBe("s4");

    const red = await log.client.listSessions({ pageSize: 10, pageToken: "", tenant, status: 0, labels: { team: "red" }, orphaned: false });
    expect(red.sessions).toHaveLength(3);
    const running = await log.client.listSessions({ pageSize: 10, pageToken: "", tenant, status: 2, labels: {}, orphaned: false });
    expect(running.sessions.map((s) => s.sessionId)).toEqual([ids[4]]);
  });
});
