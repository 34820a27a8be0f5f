/**
 * An EmitEvents answer echoes the request's events with their seqs, and events appended before
 * as first appended. Both must fit what our clients receive: a request just under the server's
 * 16 MiB limit gets its answer (which adds a session id, seq and time to each event), a retry of
 * it gets its events back as stored, and a request naming events stored larger than it sent
 * them is refused with FAILED_PRECONDITION before anything of it is written or read back (the
 * service used to read them all: 1000 small events naming 1 MiB ones made a gigabyte, and no
 * client takes the answer; and later, to write the request's new events before refusing it).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmitEventsRequest, type Event } from "@metaharness/proto";
import { MAX_RECEIVE_MESSAGE_BYTES } from "@metaharness/service-kit/grpc";
import { createPgDb } from "@metaharness/db";
import { APPEND_SQL, appendParams, EVENTS_CHANNEL, MAX_ECHOED_BYTES, shardOf } from "@metaharness/session-log";
import { newSession, rejection, startTestLog, type TestLog } from "../../support/session-log.js";
import { agentMessage, textOf } from "../../support/events.js";

const MiB = 1024 * 1024;
const BIG = 5 * MiB;

let log: TestLog;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false", MH_MAX_PAYLOAD_BYTES: String(6 * MiB) });
});
afterAll(async () => {
  await log?.stop();
});

const lastSeq = async (sessionId: string): Promise<number> => (await log.client.getSession({ sessionId })).session?.lastSeq ?? -1;

describe("EmitEvents answers", () => {
  it("fit our clients for a request just under the server's limit, with the longest session id", async () => {
    const sessionId = await newSession(log.client, `sesn_${"s".repeat(64)}`);
    // 1000 events (the most a batch takes) of equal text, as long as the request allows.
    const request = (len: number): EmitEventsRequest => ({
      sessionId,
      events: Array.from({ length: 1000 }, (_, i) => agentMessage(`${i % 10}`.repeat(len))),
      expectedSeq: undefined,
      leaseEpoch: undefined,
    });
    const size = (len: number): number => EmitEventsRequest.encode(request(len)).finish().length;
    // A first guess, then down to where the lengths' varints leave it under the limit.
    let len = Math.floor((MAX_RECEIVE_MESSAGE_BYTES - size(0)) / 1000);
    while (size(len) > MAX_RECEIVE_MESSAGE_BYTES - 1024) len -= 4;
    const sent = request(len);

    const res = await log.client.emitEvents(sent);
    // The answer is larger than the server's limit: a client that took only that much would
    // fail here, after the events were written.
    expect(res.events.map((e) => e.seq)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    expect(EmitEventsRequest.encode({ ...sent, events: res.events }).finish().length).toBeGreaterThan(MAX_RECEIVE_MESSAGE_BYTES);

    // Its retry gets the events as stored, each larger than sent, all of them.
    const again = await log.client.emitEvents(sent);
    expect(again.duplicates).toBe(1000);
    expect(again.events.map((e) => e.seq)).toEqual(res.events.map((e) => e.seq));
  });

  describe("of events appended before", () => {
    let sessionId: string;
    let stored: Event[];
    beforeAll(async () => {
      sessionId = await newSession(log.client);
      // Four events of 5 MiB, one call each (a request is at most 16 MiB): 20 MiB in the log.
      stored = [];
      for (let i = 0; i < 4; i++) stored.push((await log.client.emitEvent({ sessionId, event: agentMessage(`${i}`.repeat(BIG)) })).event as Event);
    });

    it("echo a retry of a request as it was sent, as first appended", async () => {
      const retry = stored.slice(0, 3).map((e) => agentMessage(textOf(e), e.id));
      const res = await log.client.emitEvents({ sessionId, events: retry });
      expect(res.duplicates).toBe(3);
      expect(res.events.map((e) => [e.seq, e.createdAt, textOf(e).length])).toEqual(stored.slice(0, 3).map((e) => [e.seq, e.createdAt, BIG]));
      expect(await lastSeq(sessionId)).toBe(4);
    });

    it("are refused, naming the first that does not fit, when they were stored larger than one answer carries", async () => {
      // Four small events under the ids of the four large ones.
      const err = await rejection(log.client.emitEvents({ sessionId, events: stored.map((e) => agentMessage("small", e.id)) }));
      expect(err.code).toBe("FAILED_PRECONDITION");
      expect(err.field).toBe("events[3].id");
      expect(err.details).toMatchObject({ limit_bytes: MAX_ECHOED_BYTES });
      expect(err.message).toContain("nothing was written; read them with GetEvents");
      expect(await lastSeq(sessionId)).toBe(4);
    });

    it("are budgeted per request: two retries in one batch both come back whole, beside one refused", async () => {
      // One statement for three requests, as the service batches concurrent calls: two each
      // repeat three of the four 5 MiB events (15 MiB each, 30 MiB in all), the third repeats
      // all four and adds one new event, and of another session one new event.
      const other = await newSession(log.client);
      const db = createPgDb(log.db.url, 1, () => undefined);
      try {
        const requests = [stored.slice(0, 3).map((e) => e.id), stored.slice(1, 4).map((e) => e.id), [...stored.map((e) => e.id), "sevt_mixed_new"], ["sevt_other_new"]];
        const sessions = [sessionId, sessionId, sessionId, other];
        const ids = requests.flat();
        const none = ids.map(() => null);
        const { rows } = await db.query<{ req: number; outcome: number; cur: string | null; body: Buffer | null }>(
          APPEND_SQL,
          appendParams({
            sessions, expected: sessions.map(() => null), epochs: sessions.map(() => null), shards: sessions.map(shardOf),
            counts: requests.map((r) => r.length), ids, types: ids.map(() => "agent.message"), statuses: none, awaiting: none,
            bodies: ids.map(() => Buffer.from("small")), createdAt: new Date(), announce: { channel: EVENTS_CHANNEL, prefix: "test" },
          }),
        );
        expect(rows.map((r) => [r.req, r.outcome, (r.body?.length ?? 0) > BIG])).toEqual([
          ...[1, 1, 1, 2, 2, 2].map((req) => [req, 0, true]),
          [3, 5, false],
          [4, 0, false],
        ]);
        // The refused request names its fourth event (1-based), the first past the limit.
        expect(rows.find((r) => r.req === 3)?.cur).toBe("4");
      } finally {
        await db.end();
      }
      expect(await lastSeq(sessionId)).toBe(4);
      expect(await lastSeq(other)).toBe(1);
    });

    it("are echoed without a limit to the previous release's statement (13 arguments), which cuts them itself", async () => {
      const db = createPgDb(log.db.url, 1, () => undefined);
      try {
        const ids = stored.map((e) => e.id);
        const none = ids.map(() => null);
        // 005's 13-argument statement, as that release sent it: five columns of mh_append.
        const previous = APPEND_SQL.replaceAll(", lease_ms", "").replace("mh_append_v2(", "mh_append(").replace(", $14::bigint)", ")");
        expect(previous).not.toBe(APPEND_SQL);
        const params = appendParams({
          sessions: [sessionId], expected: [null], epochs: [null], shards: [shardOf(sessionId)], counts: [4], ids,
          types: ids.map(() => "agent.message"), statuses: none, awaiting: none, bodies: ids.map(() => Buffer.from("small")),
          createdAt: new Date(), announce: { channel: EVENTS_CHANNEL, prefix: "test" },
        });
        const { rows } = await db.query<{ outcome: number; body: Buffer | null }>(previous, params.slice(0, 13));
        expect(rows.map((r) => [r.outcome, (r.body?.length ?? 0) > BIG])).toEqual(ids.map(() => [0, true]));
      } finally {
        await db.end();
      }
    });

    it("refuse a request that holds new events too, and write none of them", async () => {
      const events = [...stored.map((e) => agentMessage("small", e.id)), agentMessage("new")];
      const err = await rejection(log.client.emitEvents({ sessionId, events }));
      expect(err).toMatchObject({ code: "FAILED_PRECONDITION", field: "events[3].id" });
      expect(err.message).toContain("nothing was written");
      expect(await lastSeq(sessionId)).toBe(4);
    });

    it("still echo a request of new events and repeated ones that fits", async () => {
      const events = [agentMessage("small", stored[0]?.id), agentMessage("fits")];
      const res = await log.client.emitEvents({ sessionId, events });
      expect(res.duplicates).toBe(1);
      expect(res.events.map((e) => [e.seq, textOf(e).length])).toEqual([[stored[0]?.seq, BIG], [5, 4]]);
      expect(await lastSeq(sessionId)).toBe(5);
    });
  });
});
