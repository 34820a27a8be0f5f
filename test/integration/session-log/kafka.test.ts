/**
 * Every appended event reaches a real Kafka consumer through the outbox: keyed by session, in seq
 * order per session, with the emitter's trace context in the headers; appends go on while the
 * broker is down and the outbox drains, in order, once it is back; two relays never reorder a
 * session.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withSpan } from "@metaharness/telemetry";
import { startTestTelemetry } from "@metaharness/telemetry/testing";
import { MAX_EVENT_BYTES } from "@metaharness/service-kit/grpc";
import { createPgDb } from "@metaharness/db";
import { shardOf } from "@metaharness/session-log";
import { newSession, startTestLog, type TestLog } from "../../support/session-log.js";
import { deleteTopic } from "../../support/topics.js";
import { readTopic, type Received } from "../../support/kafka.js";
import { eventually } from "../../support/eventually.js";
import { startOwnKafka } from "../../support/own-kafka.js";
import { userMessage } from "../../support/events.js";

/** Per session: the seqs received, in arrival order. */
function bySession(received: Received[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const r of received) {
    const list = out.get(r.key) ?? [];
    list.push(r.event.seq);
    out.set(r.key, list);
  }
  return out;
}

/** Each session's seqs, deduplicated (delivery is at least once), must be 1..n in order. */
function expectOrdered(received: Received[], expected: Map<string, number>): void {
  const got = bySession(received);
  for (const [sessionId, n] of expected) {
    const seqs = got.get(sessionId) ?? [];
    const firstSeen = seqs.filter((s, i) => seqs.indexOf(s) === i);
    expect(firstSeen, sessionId).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    // Never a lower seq after a higher one, except as a duplicate of something already seen.
    let high = 0;
    for (const s of seqs) {
      if (s > high) {
        expect(s, `${sessionId}: gap after ${high}`).toBe(high + 1);
        high = s;
      }
    }
  }
}

let log: TestLog;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_REBALANCE_MS: "500" });
});
afterAll(async () => {
  await log?.stop();
});

describe("outbox to Kafka", () => {
  it("publishes every event keyed by session with the envelope and trace headers", async () => {
    const tel = startTestTelemetry("kafka-test");
    const reader = await readTopic(log.topic);
    try {
      const { session } = await log.client.createSession({ sessionId: "", metadata: undefined });
      const sessionId = session!.sessionId;
      const traceId = await withSpan("test.emit", {}, async (span) => {
        await log.client.emitEvent({ sessionId, event: userMessage("traced", "traced-1") });
        return span.spanContext().traceId;
      });
      await log.client.emitEvents({ sessionId, events: [userMessage("two"), userMessage("three")] });
      await reader.waitFor((r) => r.filter((x) => x.key === sessionId).length >= 3);
      const mine = reader.received.filter((x) => x.key === sessionId);
      expect(mine.map((r) => r.event.seq)).toEqual([1, 2, 3]);
      const first = mine[0]!;
      expect(first.event.id).toBe("traced-1");
      expect(first.event.type).toBe("user.message");
      expect(first.headers["mh-session-id"]).toBe(sessionId);
      expect(first.headers["mh-seq"]).toBe("1");
      expect(first.headers["mh-event-type"]).toBe("user.message");
      expect(first.headers["traceparent"]).toContain(traceId);
      expect(first.event.traceContext?.traceparent).toContain(traceId);
    } finally {
      await reader.close();
      await tel.telemetry.shutdown();
    }
  });

  it("publishes events up to the payload limit, and batches of them bigger than Kafka's default 1 MiB", async () => {
    // Twelve 100 KB tool outputs of one session: drained as one outbox batch, they were one
    // 1.2 MB produce for one partition, which the broker refused whole, again and again.
    const reader = await readTopic(log.topic);
    try {
      const { session } = await log.client.createSession({ sessionId: "", metadata: undefined });
      const sessionId = session!.sessionId;
      await log.client.emitEvents({ sessionId, events: Array.from({ length: 12 }, (_, i) => userMessage(`${i}`.padEnd(100_000, "x"))) });
      // One event as big as the default payload limit allows (1 MiB), envelope included.
      await log.client.emitEvent({ sessionId, event: userMessage("y".repeat(1024 * 1024 - 200)) });
      await log.client.emitEvent({ sessionId, event: userMessage("after the big ones") });
      await reader.waitFor((r) => r.filter((x) => x.key === sessionId).length >= 14, 30_000);
      expectOrdered(reader.received, new Map([[sessionId, 14]]));
    } finally {
      await reader.close();
    }
  }, 60_000);

  it("publishes an event at the highest payload limit a log takes, on a topic a harness created first", async () => {
    // readTopic creates the topic as the harness's wake consumer does; the log then finds it.
    const topic = `mh-test-events-${randomBytes(4).toString("hex")}`;
    const reader = await readTopic(topic);
    const big = await startTestLog({ MH_KAFKA_TOPIC: topic, MH_MAX_PAYLOAD_BYTES: String(MAX_EVENT_BYTES) });
    try {
      const sessionId = await newSession(big.client);
      await big.client.emitEvent({ sessionId, event: userMessage("z".repeat(MAX_EVENT_BYTES - 1024)) });
      await big.client.emitEvent({ sessionId, event: userMessage("after it") });
      await reader.waitFor((r) => r.filter((x) => x.key === sessionId).length >= 2, 30_000);
      expectOrdered(reader.received, new Map([[sessionId, 2]]));
    } finally {
      await big.stop();
      await reader.close();
      await deleteTopic(topic);
    }
  }, 60_000);

  it("deletes outbox rows whose event is gone instead of stopping at them", async () => {
    // Nothing deletes events today; 600 rows without one at the head of a shard (more than a
    // drain's 500) are what a future retention job could leave. Skipped, they were read again at
    // every drain, and the shard published nothing more.
    const reader = await readTopic(log.topic);
    const db = createPgDb(log.db.url, 1, () => undefined);
    try {
      const sessionId = await newSession(log.client);
      await db.query("INSERT INTO outbox (shard, session_id, seq) SELECT $1, $2, 1000 + g FROM generate_series(1, 600) g", [shardOf(sessionId), sessionId]);
      await log.client.emitEvent({ sessionId, event: userMessage("after the gone ones") });
      await reader.waitFor((r) => r.some((x) => x.key === sessionId), 20_000);
      // The relay deletes what it published just after publishing it.
      const queued = async (): Promise<number> =>
        (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbox WHERE session_id = $1", [sessionId])).rows[0]?.n ?? -1;
      await eventually(async () => ((await queued()) === 0 ? true : undefined), "the outbox of the session to empty");
    } finally {
      await db.end();
      await reader.close();
    }
  }, 40_000);

  // On a broker of its own (support/own-kafka.ts): stopping the shared one stopped every test
  // beside it, and from a worktree infra/kafka/down.sh (whose state is the checkout's own) stopped
  // nothing, after which up.sh failed on the port the shared broker holds.
  it("keeps appending while Kafka is down and drains in order when it is back", async () => {
    const kafka = await startOwnKafka();
    let own: TestLog | undefined;
    try {
      own = await startTestLog({ MH_KAFKA_BROKERS: kafka.brokers, MH_RELAY_REBALANCE_MS: "500" });
      const sessions: string[] = [];
      for (let i = 0; i < 4; i++) sessions.push(await newSession(own.client));
      await kafka.stop();
      try {
        const started = Date.now();
        for (let round = 0; round < 25; round++) {
          await Promise.all(sessions.map((sessionId) => own!.client.emitEvent({ sessionId, event: userMessage(`r${round}`) })));
        }
        // 100 appends with the broker down: they must not wait on Kafka (a wait on it would be a
        // second or more per round of 25); 15 s is a busy machine's margin.
        expect(Date.now() - started).toBeLessThan(15_000);
        const { rows } = await own.handle.db.query<{ n: string }>("SELECT count(*) AS n FROM outbox WHERE session_id = ANY($1)", [sessions]);
        expect(Number(rows[0]?.n)).toBe(100);
      } finally {
        await kafka.start();
      }
      const reader = await readTopic(own.topic, { MH_KAFKA_BROKERS: kafka.brokers });
      try {
        await reader.waitFor((r) => sessions.every((s) => new Set(r.filter((x) => x.key === s).map((x) => x.event.seq)).size === 25), 90_000);
        expectOrdered(reader.received, new Map(sessions.map((s) => [s, 25])));
      } finally {
        await reader.close();
      }
      // A drain deletes the rows it published with its next read (outbox/batch.ts): empty soon after, not at once.
      const queued = async (): Promise<number> => Number((await own!.handle.db.query<{ n: string }>("SELECT count(*) AS n FROM outbox")).rows[0]?.n);
      await eventually(async () => ((await queued()) === 0 ? true : undefined), "the outbox to empty");
    } finally {
      await own?.stop();
      await kafka.dispose();
    }
  }, 360_000);

  it("never reorders a session when two relays run", async () => {
    const second = await log.startReplica({ MH_RELAY_REBALANCE_MS: "200" });
    // Let the relays settle on 16 shards each (rebalance every 500 ms / 200 ms).
    await eventually(() => Promise.resolve(second.handle.relay!.shards.size >= 16 ? true : undefined), "the second relay to hold 16 shards");
    const reader = await readTopic(log.topic);
    try {
      const sessions: string[] = [];
      for (let i = 0; i < 8; i++) {
        const { session } = await log.client.createSession({ sessionId: "", metadata: undefined });
        sessions.push(session!.sessionId);
      }
      const clients = [log.client, second.client];
      for (let round = 0; round < 30; round++) {
        await Promise.all(
          sessions.map((sessionId, i) => clients[(i + round) % 2]!.emitEvent({ sessionId, event: userMessage(`r${round}`) })),
        );
      }
      await reader.waitFor((r) => sessions.every((s) => new Set(r.filter((x) => x.key === s).map((x) => x.event.seq)).size === 30), 60_000);
      expectOrdered(reader.received, new Map(sessions.map((s) => [s, 30])));
      // Both relays took part: the shards were split between them, none held twice.
      const a = [...log.handle.relay!.shards];
      const b = [...second.handle.relay!.shards];
      expect(a.length).toBe(16);
      expect(b.length).toBe(16);
      expect(new Set([...a, ...b]).size).toBe(32);
    } finally {
      await reader.close();
    }
  });

  it("shares the shards with a third relay, leaving none without a relay", async () => {
    // Three relays (two from above): 11, 11 and 10 shards. A shard nobody holds is a set of
    // sessions that never reach Kafka (an MH_RELAY_MAX_SHARDS below the share did that; it is gone).
    const third = await log.startReplica({ MH_RELAY_REBALANCE_MS: "200" });
    const held = async (): Promise<number> => {
      const { rows } = await log.handle.db.query<{ n: string }>(
        // The relays' shard locks (class 0x6d68) in this test's database.
        `SELECT count(DISTINCT objid) AS n FROM pg_locks
          WHERE locktype = 'advisory' AND classid = ${0x6d68} AND granted
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      );
      return Number(rows[0]?.n);
    };
    // The others give shards up at their next rebalances (every 500 and 200 ms); the new one takes them.
    const settled = async (): Promise<boolean> => third.handle.relay!.shards.size >= 10 && (await held()) === 32;
    // Settled: so at every check for 1.2 s on end (longer than any rebalance period).
    let since: number | undefined;
    await eventually(
      async () => {
        if (!(await settled())) since = undefined;
        else since ??= Date.now();
        return since !== undefined && Date.now() - since >= 1_200 ? true : undefined;
      },
      "the three relays to hold every shard for 1.2 s on end",
      20_000,
    );
    expect(third.handle.relay!.shards.size).toBeGreaterThanOrEqual(10);
    expect(await held()).toBe(32);
  });
});
