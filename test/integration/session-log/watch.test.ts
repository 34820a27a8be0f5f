/**
 * WatchEvents against the real Postgres: backlog then live with no gap and no duplicate at the
 * join, reconnection from the last seq, delivery across two service instances (LISTEN/NOTIFY),
 * deltas one a message or batched, type filters, and the end of the stream at termination.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import * as grpc from "@grpc/grpc-js";
import pg from "pg";
import { DeltaKind, EventDelta, Timestamp, type Event } from "@metaharness/proto";
import { startTestLog, type LogClient, type TestLog } from "../../support/session-log.js";
import { agentMessage, userMessage } from "../../support/events.js";
import { eventually } from "../../support/eventually.js";

let log: TestLog;
let replica: LogClient;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false", MH_WATCH_RECHECK_MS: "60000" });
  replica = (await log.startReplica()).client;
});
afterAll(async () => {
  await log?.stop();
});

async function newSession(): Promise<string> {
  const { session } = await log.client.createSession({ sessionId: "", metadata: undefined });
  return session!.sessionId;
}

/** A model request id no test's deltas use: the probes of `subscribed` (watchers here skip them). */
const PROBE = "sevt_probe";

const textDelta = (text: string, modelRequestId = "sevt_req") => ({
  sessionId: "",
  modelRequestId,
  blockIndex: 0,
  kind: DeltaKind.DELTA_KIND_TEXT,
  text,
  emittedAt: undefined,
});

/**
 * Resolves once a watcher of the session is subscribed (`saw()` says it got a probe delta), so
 * what is sent next reaches it live: deltas are stored nowhere, so a probe published before the
 * watcher subscribed is gone, and one that arrives proves it is listening. Probes go through the
 * first instance (log.client) and keep coming until one arrives.
 */
async function subscribed(sessionId: string, saw: () => boolean): Promise<void> {
  await eventually(async () => {
    if (saw()) return true;
    await log.client.publishDeltas({ sessionId, deltas: [textDelta("probe", PROBE)] });
    return undefined;
  }, `a watcher of ${sessionId} to receive a probe delta`);
}

/**
 * A watch stream read until `until` says stop: the events that arrived, and whether a probe delta
 * did (`probe`: deltas asked for only so that a probe can show the watcher subscribed).
 */
function collect(
  client: LogClient,
  req: { sessionId: string; afterSeq: number; types?: string[]; probe?: boolean; fromHead?: boolean; exceptLeaseEpoch?: number },
  until: (events: Event[]) => boolean,
): { events: Promise<Event[]>; probed: () => boolean } {
  let probed = false;
  const events = (async () => {
    const got: Event[] = [];
    const includeDeltas = req.probe === true;
    for await (const msg of client.watchEvents({ sessionId: req.sessionId, afterSeq: req.afterSeq, types: req.types ?? [], includeDeltas, batchDeltas: false, fromHead: req.fromHead === true, exceptLeaseEpoch: req.exceptLeaseEpoch })) {
      if (msg.delta?.modelRequestId === PROBE) probed = true;
      if (msg.event) got.push(msg.event);
      if (until(got)) break;
    }
    return got;
  })();
  return { events, probed: () => probed };
}

describe("WatchEvents", () => {
  it("joins backlog and live events with no gap and no duplicate while appends race the join", async () => {
    const sessionId = await newSession();
    const total = 300;
    await log.client.emitEvents({ sessionId, events: Array.from({ length: 100 }, (_, i) => userMessage(`b${i}`)) });
    const watching = collect(log.client, { sessionId, afterSeq: 0 }, (e) => e.length >= total).events;
    // Live appends start at once, so they interleave with the backlog read.
    for (let i = 100; i < total; i += 10) {
      await log.client.emitEvents({ sessionId, events: Array.from({ length: 10 }, (_, j) => agentMessage(`l${i + j}`)) });
    }
    const got = await watching;
    expect(got.map((e) => e.seq)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  });

  it("resumes from the last seq a client saw, missing nothing", async () => {
    const sessionId = await newSession();
    await log.client.emitEvents({ sessionId, events: Array.from({ length: 20 }, (_, i) => userMessage(`m${i}`)) });
    const first = await collect(log.client, { sessionId, afterSeq: 0 }, (e) => e.length === 8).events;
    const lastSeen = first[first.length - 1]!.seq;
    await log.client.emitEvents({ sessionId, events: Array.from({ length: 5 }, (_, i) => userMessage(`n${i}`)) });
    const second = await collect(log.client, { sessionId, afterSeq: lastSeen }, (e) => e.length === 17).events;
    expect([...first, ...second].map((e) => e.seq)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
  });

  it("delivers appends made through another instance (Postgres NOTIFY), promptly", async () => {
    const sessionId = await newSession();
    const watching = collect(replica, { sessionId, afterSeq: 0, probe: true }, (e) => e.length === 3);
    // Subscribed on the replica before the appends, so they can only reach it live.
    await subscribed(sessionId, watching.probed);
    const started = Date.now();
    for (let i = 0; i < 3; i++) await log.client.emitEvent({ sessionId, event: userMessage(`x${i}`) });
    const got = await watching.events;
    expect(got.map((e) => e.seq)).toEqual([1, 2, 3]);
    // The re-check interval is 60 s here, so this can only be the NOTIFY path.
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("starts at a head this instance knows (created or leased here) without a read, and still gets every later append: another instance's, one racing the start, the termination", async () => {
    // Created here: its head (0) is known, so the watch from 0 waits at once; the appends come
    // through the other instance, so only their NOTIFY can bring them here.
    const sessionId = await newSession();
    const watching = collect(log.client, { sessionId, afterSeq: 0 }, (e) => e.length === 3);
    for (let i = 0; i < 3; i++) await replica.emitEvent({ sessionId, event: userMessage(`r${i}`) });
    expect((await watching.events).map((e) => e.seq)).toEqual([1, 2, 3]);

    // An append through the other instance just before a watch here starts at the head it knew:
    // committed before the watch, heard after it subscribed (or before, then the head is not used).
    const raced = await newSession();
    await replica.emitEvent({ sessionId: raced, event: userMessage("first") });
    expect((await collect(log.client, { sessionId: raced, afterSeq: 0 }, (e) => e.length === 1).events).map((e) => e.seq)).toEqual([1]);

    // Leased here: the holder's follow starts at the lease's last seq; the termination, appended
    // here, ends it (the head is forgotten and the watch reads the status).
    const leased = await newSession();
    await log.client.emitEvents({ sessionId: leased, events: [userMessage("u1"), userMessage("u2")] });
    const { session, lease } = await log.client.acquireLease({ sessionId: leased, holder: "hold_watch_head", ttlMs: 30_000 });
    expect(session!.lastSeq).toBe(2);
    const following = collect(log.client, { sessionId: leased, afterSeq: 2 }, () => false).events;
    await replica.emitEvent({ sessionId: leased, event: agentMessage("a"), leaseEpoch: lease!.epoch });
    await log.client.emitEvent({ sessionId: leased, event: newEvent("session.status_terminated", {}), leaseEpoch: lease!.epoch });
    expect((await following).map((e) => [e.seq, e.type])).toEqual([
      [3, "agent.message"],
      [4, "session.status_terminated"],
    ]);
    // Terminated: a watch from its last seq reads, finds the status and ends at once.
    expect(await collect(log.client, { sessionId: leased, afterSeq: 4 }, () => false).events).toEqual([]);
  });

  it("leaves out what was appended here under the lease epoch a watch names, and sends everything else: others' appends between, and that epoch's appends through another instance", async () => {
    const sessionId = await newSession();
    const { lease } = await log.client.acquireLease({ sessionId, holder: "hold_watch_except", ttlMs: 30_000 });
    const epoch = lease!.epoch;
    const watching = collect(log.client, { sessionId, afterSeq: 0, probe: true, exceptLeaseEpoch: epoch }, (e) => e.some((x) => x.seq === 6));
    await subscribed(sessionId, watching.probed);
    await log.client.emitEvent({ sessionId, event: agentMessage("own 1"), leaseEpoch: epoch });
    await log.client.emitEvent({ sessionId, event: userMessage("a client's") });
    await log.client.emitEvents({ sessionId, events: [agentMessage("own 2"), agentMessage("own 3")], leaseEpoch: epoch });
    // Through the other instance: heard here by NOTIFY and read from the store, so sent.
    await replica.emitEvent({ sessionId, event: agentMessage("own 4, elsewhere"), leaseEpoch: epoch });
    await log.client.emitEvent({ sessionId, event: userMessage("another client's") });
    expect((await watching.events).map((e) => e.seq)).toEqual([2, 5, 6]);
  });

  it("filters by type and ends the stream once the session is terminated", async () => {
    const sessionId = await newSession();
    await log.client.emitEvents({
      sessionId,
      events: [userMessage("u"), agentMessage("a1"), agentMessage("a2"), newEvent("session.status_terminated", {})],
    });
    const got = await collect(log.client, { sessionId, afterSeq: 0, types: ["agent.message"] }, () => false).events;
    expect(got.map((e) => e.seq)).toEqual([2, 3]);
  });

  it("streams ephemeral deltas to watchers that ask, on any instance, before the stored message", async () => {
    const sessionId = await newSession();
    const items: string[] = [];
    let probed = false;
    const watching = (async () => {
      for await (const msg of replica.watchEvents({ sessionId, afterSeq: 0, types: [], includeDeltas: true, batchDeltas: false, fromHead: false })) {
        if (msg.delta?.modelRequestId === PROBE) probed = true;
        else items.push(msg.delta ? `delta:${msg.delta.text}` : `event:${msg.event!.seq}`);
        if (msg.event?.type === "agent.message") break;
      }
    })();
    await subscribed(sessionId, () => probed);
    const delta = (text: string) => textDelta(text);
    await log.client.publishDeltas({ sessionId, deltas: [delta("Hel"), delta("lo")] });
    // Deltas and appends reach another instance through two NOTIFY channels, in no set order
    // between them (deltas go out batched, after PublishDeltas answered): the message is appended
    // once its deltas are there, as a harness appends it after the stream they came from.
    await eventually(() => Promise.resolve(items.length >= 2 ? true : undefined), () => `both deltas on the other instance: ${items.join(", ")}`);
    await log.client.emitEvent({ sessionId, event: agentMessage("Hello") });
    await watching;
    expect(items).toEqual(["delta:Hel", "delta:lo", "event:1"]);
    const stored = await log.client.getEvents({ sessionId, position: undefined, limit: 10, types: [] });
    expect(stored.events).toHaveLength(1);
    await expect(
      log.client.publishDeltas({ sessionId, deltas: [{ ...delta("x"), kind: DeltaKind.DELTA_KIND_UNSPECIFIED }] }),
    ).rejects.toMatchObject({ code: "INVALID_ARGUMENT", field: "deltas[0].kind" });
    // An unknown kind (decoded as UNRECOGNIZED, -1), a time no Date holds, a delta too big for a
    // NOTIFY: each refused, naming it, before any watcher gets it.
    await expect(log.client.publishDeltas({ sessionId, deltas: [delta("a"), { ...delta("x"), kind: -1 }] })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      field: "deltas[1].kind",
    });
    await expect(publishRaw(`127.0.0.1:${log.handle.port}`, log.tokens.tokens.harness, sessionId, Timestamp.encode({ seconds: 1e13, nanos: 0 }).finish())).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: expect.stringContaining("deltas[0].emitted_at") as unknown,
    });
    // Too big for one NOTIFY (other instances get deltas that way): cut into pieces, in order.
    const big = "é".repeat(3000) + "x".repeat(3000);
    let piecesProbed = false;
    const pieces = (async () => {
      let text = "";
      for await (const msg of replica.watchEvents({ sessionId, afterSeq: 1, types: [], includeDeltas: true, batchDeltas: false, fromHead: false })) {
        if (msg.delta?.modelRequestId === PROBE) piecesProbed = true;
        else text += msg.delta?.text ?? "";
        if (text.length >= big.length) break;
      }
      return text;
    })();
    await subscribed(sessionId, () => piecesProbed);
    await expect(log.client.publishDeltas({ sessionId, deltas: [delta(big)] })).resolves.toEqual({});
    expect(await pieces).toBe(big);
  });

  it("sends a watcher that batches deltas those of one PublishDeltas as one message, in order, before the stored message", async () => {
    const sessionId = await newSession();
    const items: string[] = [];
    const singles: unknown[] = [];
    let probed = false;
    const watching = (async () => {
      for await (const msg of log.client.watchEvents({ sessionId, afterSeq: 0, types: [], includeDeltas: true, batchDeltas: true, fromHead: false })) {
        if (msg.delta !== undefined) singles.push(msg.delta);
        if (msg.deltas.some((d) => d.modelRequestId === PROBE)) probed = true;
        else items.push(msg.event === undefined ? `deltas:${msg.deltas.map((d) => d.text).join("|")}` : `event:${msg.event.seq}`);
        if (msg.event?.type === "agent.message") break;
      }
    })();
    await subscribed(sessionId, () => probed);
    await log.client.publishDeltas({ sessionId, deltas: [textDelta("Hel"), textDelta("lo"), textDelta("!")] });
    await log.client.emitEvent({ sessionId, event: agentMessage("Hello!") });
    await watching;
    expect(items).toEqual(["deltas:Hel|lo|!", "event:1"]);
    expect(singles).toEqual([]);
  });

  it("publishes an append's deltas before its events, within PublishDeltas's limits", async () => {
    const sessionId = await newSession();
    const items: string[] = [];
    let probed = false;
    const watching = (async () => {
      for await (const msg of log.client.watchEvents({ sessionId, afterSeq: 0, types: [], includeDeltas: true, batchDeltas: false, fromHead: false })) {
        if (msg.delta?.modelRequestId === PROBE) probed = true;
        else items.push(msg.delta ? `delta:${msg.delta.text}` : `event:${msg.event!.seq}`);
        if (msg.event?.seq === 2) break;
      }
    })();
    await subscribed(sessionId, () => probed);
    const delta = (text: string) => textDelta(text);
    const tooMany = Array.from({ length: 101 }, () => delta("x"));
    await expect(log.client.emitEvents({ sessionId, events: [agentMessage("no")], deltas: { deltas: tooMany } })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", field: "deltas" });
    await log.client.emitEvents({ sessionId, events: [agentMessage("Hello"), agentMessage("again")], deltas: { deltas: [delta("Hel"), delta("lo")] } });
    await watching;
    expect(items).toEqual(["delta:Hel", "delta:lo", "event:1", "event:2"]);
    // The refused call appended nothing.
    expect((await log.client.getEvents({ sessionId, position: undefined, limit: 10, types: [] })).events).toHaveLength(2);
  });

  it("takes no deltas for an unknown or terminated session", async () => {
    const delta = { sessionId: "", modelRequestId: "sevt_req", blockIndex: 0, kind: DeltaKind.DELTA_KIND_TEXT, text: "x", emittedAt: undefined };
    await expect(log.client.publishDeltas({ sessionId: "sesn_never_created", deltas: [delta] })).rejects.toMatchObject({
      code: "NOT_FOUND",
      field: "session_id",
    });
    const sessionId = await newSession();
    await log.client.emitEvent({ sessionId, event: newEvent("session.status_terminated", {}) });
    await expect(log.client.publishDeltas({ sessionId, deltas: [delta] })).rejects.toMatchObject({ code: "FAILED_PRECONDITION", field: "session_id" });
    // Taken while it runs, refused at once after a termination appended through the same instance.
    const running = await newSession();
    await expect(log.client.publishDeltas({ sessionId: running, deltas: [delta] })).resolves.toEqual({});
    await log.client.emitEvent({ sessionId: running, event: newEvent("session.status_terminated", {}) });
    await expect(log.client.publishDeltas({ sessionId: running, deltas: [delta] })).rejects.toMatchObject({ code: "FAILED_PRECONDITION" });
  });

  it("re-reads once after its LISTEN connection comes back, then waits again instead of reading in a loop", async () => {
    const sessionId = await newSession();
    const watching = collect(log.client, { sessionId, afterSeq: 0, probe: true }, (e) => e.length >= 1);
    // Subscribed before its LISTEN connection goes, so the reconnect is what wakes it.
    await subscribed(sessionId, watching.probed);
    const admin = new pg.Client({ connectionString: log.db.url });
    await admin.connect();
    try {
      const listening = "datname = current_database() AND query ILIKE 'LISTEN%'";
      const killed = await admin.query<{ pid: number }>(`SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity WHERE ${listening}`);
      expect(killed.rowCount).toBeGreaterThan(0);
      const gone = killed.rows.map((r) => r.pid);
      // Both instances listen again (after a 100 ms backoff) on as many new connections.
      await eventually(async () => {
        const { rows } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${listening} AND NOT (pid = ANY($1))`, [gone]);
        return rows[0]!.n >= gone.length ? true : undefined;
      }, `${gone.length} LISTEN connections to come back`);
      // What the instances' connections ran: a watcher stuck re-reading ran thousands of reads a second.
      const statements = async (): Promise<number> => {
        await admin.query("SELECT pg_stat_clear_snapshot()");
        const { rows } = await admin.query<{ n: string }>("SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()");
        return Number(rows[0]?.n);
      };
      const before = await statements();
      // A fixed window on purpose (proves a loop does NOT happen): backends report counts at most once a second.
      // A loop runs thousands a second; both instances' own work (relay, sweeps, peers' notices)
      // came to 101 once in CI, so the bound leaves room for that and none for a loop.
      await new Promise((r) => setTimeout(r, 2_500));
      expect((await statements()) - before).toBeLessThan(500);
      // And it still hears of appends.
      await log.client.emitEvent({ sessionId, event: agentMessage("after the reconnect") });
      expect((await watching.events).map((e) => e.seq)).toEqual([1]);
    } finally {
      await admin.end();
    }
  });

  it("starts from the head when asked, whatever after_seq says: only later events, on an instance that knows the head and one that reads it", async () => {
    const sessionId = await newSession();
    await log.client.emitEvent({ sessionId, event: userMessage("one") });
    await log.client.emitEvent({ sessionId, event: userMessage("two") });
    const here = collect(log.client, { sessionId, afterSeq: 999_999, probe: true, fromHead: true }, (got) => got.length >= 2);
    const there = collect(replica, { sessionId, afterSeq: 0, probe: true, fromHead: true }, (got) => got.length >= 2);
    await subscribed(sessionId, () => here.probed() && there.probed());
    await log.client.emitEvent({ sessionId, event: userMessage("three") });
    await replica.emitEvent({ sessionId, event: userMessage("four") });
    expect((await here.events).map((e) => e.seq)).toEqual([3, 4]);
    expect((await there.events).map((e) => e.seq)).toEqual([3, 4]);
    // A terminated session's watch ends at once: on the instance that appended the termination,
    // and on another once it heard of it (until then it knew a head before it, so its watch starts
    // there and ends after sending the termination); an unknown one is NOT_FOUND.
    await log.client.emitEvent({ sessionId, event: newEvent("session.status_terminated", {}) });
    await expect(collect(log.client, { sessionId, afterSeq: 0, fromHead: true }, () => false).events).resolves.toEqual([]);
    await eventually(
      async () => ((await collect(replica, { sessionId, afterSeq: 0, fromHead: true }, () => false).events).length === 0 ? true : undefined),
      "a from_head watch on the other instance to end at once",
    );
    await expect(collect(log.client, { sessionId: "sesn_missing", afterSeq: 0, fromHead: true }, () => true).events).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("says where a from_head watch starts in its first message, on an instance that knows the head and one that reads it", async () => {
    const sessionId = await newSession();
    await log.client.emitEvents({ sessionId, events: [userMessage("one"), userMessage("two")] });
    for (const client of [log.client, replica]) {
      let first: unknown;
      for await (const msg of client.watchEvents({ sessionId, afterSeq: 0, types: [], includeDeltas: true, batchDeltas: true, fromHead: true })) {
        first = msg;
        break;
      }
      // The gateway opens an SSE stream from now only once it has it: what a client sends after is after it.
      expect(first).toEqual({ event: undefined, delta: undefined, deltas: [], startedAfter: 2 });
    }
  });

  it("answers NOT_FOUND for an unknown session and OUT_OF_RANGE past its last event, instead of waiting", async () => {
    await expect(collect(log.client, { sessionId: "sesn_missing", afterSeq: 0 }, () => true).events).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
    // A position the session has not reached: an answer, not a wait for events that cannot come.
    const sessionId = await newSession();
    await log.client.emitEvent({ sessionId, event: userMessage("one") });
    await expect(collect(log.client, { sessionId, afterSeq: 5 }, () => true).events).rejects.toMatchObject({ code: "OUT_OF_RANGE", field: "after_seq" });
  });
});

/**
 * PublishDeltas with one TEXT delta whose emitted_at is `timestamp` as encoded: no Date holds
 * some times the wire can carry (seconds up to 2^63), so this request cannot be made from one.
 */
function publishRaw(address: string, token: string, sessionId: string, timestamp: Uint8Array): Promise<void> {
  const head = Buffer.from(EventDelta.encode({ sessionId: "", modelRequestId: "sevt_req", blockIndex: 0, kind: DeltaKind.DELTA_KIND_TEXT, text: "x", emittedAt: undefined }).finish());
  const delta = Buffer.concat([head, Buffer.from([0x32, timestamp.length]), timestamp]);
  const id = Buffer.from(sessionId);
  const request = Buffer.concat([Buffer.from([0x0a, id.length]), id, Buffer.from([0x12, delta.length]), delta]);
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const identity = (b: Buffer): Buffer => b;
  return new Promise<void>((resolve, reject) => {
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${token}`);
    client.makeUnaryRequest("/metaharness.v1.SessionLog/PublishDeltas", identity, identity, request, metadata, (err) => {
      client.close();
      if (err) reject(err);
      else resolve();
    });
  });
}
