/**
 * A relay drain reads the outbox oldest first within a row limit and a byte budget, so a backlog
 * of large events is published a bounded batch at a time instead of read whole into memory; it
 * always reads at least one event, says when rows were left for the next drain, names the rows
 * whose event is gone (kafka.test.ts: the relay deletes them), and finds each event by its key.
 * The previous batch's rows (published) are deleted by the next batch's own statement.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgDb, type Db } from "@metaharness/db";
import { Event } from "@metaharness/proto";
import { OUTBOX_BATCH_SQL, OUTBOX_DELETE_AND_BATCH_SQL, OUTBOX_SHARDS, readOutboxBatch } from "@metaharness/session-log";
import { newSession, startTestLog, type TestLog } from "../../support/session-log.js";
import { agentMessage, textOf } from "../../support/events.js";

const SHARDS = Array.from({ length: OUTBOX_SHARDS }, (_, i) => i);
const TEXT = 100_000;

let log: TestLog;
let db: Db;
let sessionId: string;
beforeAll(async () => {
  // No relay: the outbox keeps what is appended.
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  db = createPgDb(log.db.url, 2, () => undefined);
  sessionId = await newSession(log.client);
  await log.client.emitEvents({ sessionId, events: Array.from({ length: 10 }, (_, i) => agentMessage(`${i}`.repeat(TEXT))) });
});
afterAll(async () => {
  await db?.end();
  await log?.stop();
});

const seqs = (rows: { seq: string | number | bigint }[]): number[] => rows.map((r) => Number(r.seq));

describe("an outbox batch", () => {
  it("stops before the event that would take it over the byte budget, oldest first", async () => {
    const batch = await readOutboxBatch(db, SHARDS, 500, 3.5 * TEXT);
    expect(seqs(batch.rows)).toEqual([1, 2, 3]);
    expect(batch.rows.map((r) => textOf(Event.decode(r.body)))).toEqual(["0", "1", "2"].map((d) => d.repeat(TEXT)));
    expect(batch.more).toBe(true);
  });

  it("always holds one event, however small the budget", async () => {
    const batch = await readOutboxBatch(db, SHARDS, 500, 1);
    expect(seqs(batch.rows)).toEqual([1]);
    expect(batch.more).toBe(true);
  });

  it("holds the whole backlog within both bounds, and says there is no more", async () => {
    const batch = await readOutboxBatch(db, SHARDS, 500, 64 * 1024 * 1024);
    expect(seqs(batch.rows)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(batch.more).toBe(false);
  });

  it("names rows whose event is gone, to be deleted rather than stop their shard", async () => {
    const other = await newSession(log.client);
    await log.client.emitEvents({ sessionId: other, events: [agentMessage("a"), agentMessage("b")] });
    // Nothing deletes events; a row without one is what a future retention job could leave.
    await db.query("INSERT INTO outbox (shard, session_id, seq) SELECT shard, session_id, 99 FROM outbox WHERE session_id = $1 AND seq = 1", [other]);
    const [orphan] = (await db.query<{ id: string }>("SELECT id FROM outbox WHERE session_id = $1 AND seq = 99", [other])).rows;
    const batch = await readOutboxBatch(db, SHARDS, 500, 64 * 1024 * 1024);
    expect(batch.gone).toEqual([orphan?.id]);
    expect(batch.rows.map((r) => [r.session_id, Number(r.seq)])).toEqual([
      ...Array.from({ length: 10 }, (_, i) => [sessionId, i + 1]),
      [other, 1],
      [other, 2],
    ]);
    await db.query("DELETE FROM outbox WHERE session_id = $1", [other]);
  });

  it("looks each event and its session's tenant up by their keys, whatever the statistics say (never a scan of the log)", async () => {
    // This database was never analyzed: a plain join hashed the whole events table at every drain.
    type Node = { "Node Type": string; "Relation Name"?: string; Plans?: Node[] };
    const { rows } = await db.query<{ "QUERY PLAN": Array<{ Plan: Node }> }>(`EXPLAIN (FORMAT JSON) ${OUTBOX_BATCH_SQL}`, [SHARDS, 500, 1024]);
    const nodes = (n: Node): Node[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
    const onEvents = nodes(rows[0]?.["QUERY PLAN"][0]?.Plan as Node).filter((n) => n["Relation Name"] === "events");
    expect(onEvents.map((n) => n["Node Type"])).toEqual(["Index Scan"]);
    const onSessions = nodes(rows[0]?.["QUERY PLAN"][0]?.Plan as Node).filter((n) => n["Relation Name"] === "sessions");
    expect(onSessions.map((n) => n["Node Type"])).toEqual(["Index Scan"]);
  });

  it("says there may be more when the row limit is reached", async () => {
    const batch = await readOutboxBatch(db, SHARDS, 10, 64 * 1024 * 1024);
    expect(batch.rows).toHaveLength(10);
    expect(batch.more).toBe(true);
    expect((await readOutboxBatch(db, SHARDS, 4, 64 * 1024 * 1024)).rows).toHaveLength(4);
  });

  it("deletes the previous batch's rows in its own statement and passes over them, on an index", async () => {
    const other = await newSession(log.client);
    await log.client.emitEvents({ sessionId: other, events: ["a", "b", "c", "d"].map((t) => agentMessage(t)) });
    const mine = async (): Promise<number[]> =>
      (await db.query<{ seq: string }>("SELECT seq FROM outbox WHERE session_id = $1 ORDER BY id", [other])).rows.map((r) => Number(r.seq));
    const first = (await readOutboxBatch(db, SHARDS, 500, 64 * 1024 * 1024)).rows.filter((r) => r.session_id === other);
    expect(seqs(first)).toEqual([1, 2, 3, 4]);
    const published = first.slice(0, 2).map((r) => r.id);
    const next = (await readOutboxBatch(db, SHARDS, 500, 64 * 1024 * 1024, published)).rows.filter((r) => r.session_id === other);
    expect(seqs(next)).toEqual([3, 4]);
    expect(await mine()).toEqual([3, 4]);
    type Node = { "Node Type": string; "Relation Name"?: string; Plans?: Node[] };
    const { rows } = await db.query<{ "QUERY PLAN": Array<{ Plan: Node }> }>(`EXPLAIN (FORMAT JSON) ${OUTBOX_DELETE_AND_BATCH_SQL}`, [SHARDS, 500, 1024, ["1"]]);
    const nodes = (n: Node): Node[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
    expect(nodes(rows[0]?.["QUERY PLAN"][0]?.Plan as Node).filter((n) => n["Relation Name"] === "events").map((n) => n["Node Type"])).toEqual(["Index Scan"]);
    await db.query("DELETE FROM outbox WHERE session_id = $1", [other]);
  });
});
