/**
 * mh_append (migrations/004: statements per batch) against the function it replaced, kept as
 * mh_append_serial (003: statements per request), on the real Postgres. Two databases, each
 * migrated by a session-log instance, get the same random batches: one through each function.
 * The rows returned and, at the end, every session, event and outbox row must be the same. The
 * batches mix what a per-batch function could get wrong: several requests of one session, retries
 * (in the log and within the batch), expected seqs and lease epochs both current and stale,
 * statuses, terminations and sessions that do not exist.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import pg from "pg";
import { APPEND_SERIAL_SQL, APPEND_SQL, appendParams, EVENTS_CHANNEL } from "@metaharness/session-log";
import { startTestLog, type TestLog } from "../../support/session-log.js";

const BATCHES = 1200;
/** Sessions are replaced by fresh ones every ROUND batches, before terminations end them all. */
const ROUND = 150;
const SESSIONS_PER_ROUND = 5;

interface Side {
  readonly log: TestLog;
  readonly pool: pg.Pool;
}
let perBatch: Side;
let serial: Side;

async function side(): Promise<Side> {
  const log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  return { log, pool: new pg.Pool({ connectionString: log.db.url, max: 1 }) };
}

beforeAll(async () => {
  [perBatch, serial] = await Promise.all([side(), side()]);
  expect(APPEND_SERIAL_SQL).not.toBe(APPEND_SQL);
});
afterAll(async () => {
  for (const s of [perBatch, serial]) {
    await s?.pool.end();
    await s?.log.stop();
  }
});

/** A deterministic generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Params = unknown[];

/** Event ids handed out so far (the new ones, outside the retry pool). */
let fresh = 0;

/** One random batch over `sessions` (and one that does not exist), as store/append.ts sends it. */
function batch(rnd: () => number, sessions: readonly string[], heads: ReadonlyMap<string, number>, at: Date): Params {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const requests = 1 + Math.floor(rnd() * 6);
  const cols = { sessions: [] as string[], expected: [] as Array<number | null>, epochs: [] as Array<number | null>, shards: [] as number[], counts: [] as number[] };
  const ev = { ids: [] as string[], types: [] as string[], statuses: [] as Array<number | null>, awaiting: [] as Array<boolean | null>, bodies: [] as Buffer[] };
  for (let r = 0; r < requests; r++) {
    const sessionId = rnd() < 0.05 ? "sesn_missing" : pick(sessions);
    const head = heads.get(sessionId) ?? 0;
    const e = rnd();
    const x = rnd();
    cols.sessions.push(sessionId);
    cols.epochs.push(e < 0.6 ? null : e < 0.9 ? 0 : 1);
    cols.expected.push(x < 0.6 ? null : x < 0.9 ? head : Math.max(0, head - 1));
    cols.shards.push(Math.floor(rnd() * 4));
    const count = 1 + Math.floor(rnd() * 4);
    cols.counts.push(count);
    // Mostly new ids; one in ten from a small pool, which soon holds appended events: retries
    // of earlier appends (in the log, or earlier in the same batch). Distinct within a request.
    const ids = new Set<string>();
    while (ids.size < count) ids.add(rnd() < 0.1 ? `sevt_retry_${Math.floor(rnd() * 6)}` : `sevt_${(fresh += 1)}`);
    for (const id of ids) {
      const s = rnd();
      ev.ids.push(id);
      ev.types.push("agent.message");
      ev.statuses.push(s < 0.8 ? null : s < 0.99 ? 1 + Math.floor(rnd() * 2) : 3);
      ev.awaiting.push(rnd() < 0.7 ? null : rnd() < 0.5);
      ev.bodies.push(Buffer.from([0x0a, Math.floor(rnd() * 256), Math.floor(rnd() * 256)]));
    }
  }
  return appendParams({ ...cols, ...ev, createdAt: at, announce: { channel: EVENTS_CHANNEL, prefix: "test" } });
}

interface Row {
  req: number;
  outcome: number;
  seq: string | null;
  cur: string | null;
  body: Buffer | null;
}

/** Rows grouped by request, in their order within it: the contract does not order requests. */
const byRequest = (rows: Row[]): Row[] => rows.map((row, i) => ({ row, i })).sort((a, b) => a.row.req - b.row.req || a.i - b.i).map((x) => x.row);

const both = async (sql: string, params: Params = []): Promise<void> => {
  await perBatch.pool.query(sql, params);
  await serial.pool.query(sql, params);
};

const dump = async (pool: pg.Pool): Promise<unknown> => ({
  sessions: (await pool.query("SELECT session_id, last_seq, status, awaiting_harness, lease_epoch, updated_at FROM sessions ORDER BY session_id")).rows,
  events: (await pool.query("SELECT session_id, seq, event_id, type, created_at, body FROM events ORDER BY session_id, seq")).rows,
  outbox: (await pool.query("SELECT id, shard, session_id, seq FROM outbox ORDER BY id")).rows,
});

it("returns and stores what the per-request function does, batch after batch", async () => {
  const rnd = random(20261202);
  const heads = new Map<string, number>();
  let sessions: string[] = [];
  const seen = { fast: 0, retries: 0, rejected: 0, appended: 0 };
  for (let b = 0; b < BATCHES; b++) {
    if (b % ROUND === 0) {
      sessions = Array.from({ length: SESSIONS_PER_ROUND }, (_, i) => `sesn_r${b / ROUND}_${i}`);
      for (const s of sessions) await both("INSERT INTO sessions (session_id, metadata) VALUES ($1, '{}')", [s]);
    }
    // Now and then a lease changes hands: epoch 1 becomes current and 0 stale.
    if (rnd() < 0.02) await both("UPDATE sessions SET lease_epoch = 1 WHERE session_id = $1", [sessions[Math.floor(rnd() * sessions.length)]]);
    const params = batch(rnd, sessions, heads, new Date(Date.UTC(2026, 11, 2, 0, 0, b)));
    const got = byRequest((await perBatch.pool.query<Row>(APPEND_SQL, params)).rows);
    const want = byRequest((await serial.pool.query<Row>(APPEND_SERIAL_SQL, params)).rows);
    expect(got, `batch ${b}`).toEqual(want);
    const sent = params[0] as string[];
    for (const row of want) {
      if (row.outcome === 0 && row.cur !== null) heads.set(sent[row.req - 1] as string, Number(row.cur));
    }
    if (want.some((r) => r.body !== null)) seen.retries += 1;
    else seen.fast += 1;
    seen.rejected += want.filter((r) => r.outcome !== 0).length;
    seen.appended += want.filter((r) => r.outcome === 0 && r.body === null).length;
  }
  expect(await dump(perBatch.pool)).toEqual(await dump(serial.pool));
  // Both paths of the new function, and every outcome, were exercised.
  expect(seen.fast).toBeGreaterThan(BATCHES / 5);
  expect(seen.retries).toBeGreaterThan(BATCHES / 10);
  expect(seen.rejected).toBeGreaterThan(100);
  expect(seen.appended).toBeGreaterThan(1000);
  const statuses = await serial.pool.query<{ n: string }>("SELECT count(DISTINCT status) AS n FROM sessions WHERE last_seq > 0");
  expect(Number(statuses.rows[0]?.n)).toBeGreaterThan(1);
}, 300_000);
