/**
 * A tool call runs once per session, and a session's keyed sandbox is one, whatever races: the
 * ledger is keyed by session and call_id (a call naming another sandbox of the session is a
 * repeat), and Provisions with one key end in one ready sandbox (the harness's default sandbox).
 * Real broker, real bubblewrap, real Postgres.
 */
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgDb, migrate } from "@metaharness/db";
import { SandboxState } from "@metaharness/proto";
import { createTestDatabase } from "../../support/postgres.js";
import { callId, provision, run, startTestBroker, type TestBroker } from "../../support/sandbox-broker.js";
import { newSession, rejection, startTestLog, type TestLog } from "../../support/session-log.js";

const MIGRATIONS = new URL("../../../apps/sandbox-broker/migrations/", import.meta.url);

let log: TestLog;
let broker: TestBroker;

beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  broker = await startTestBroker({ ...log.reach("broker"), MH_WARM_POOL_SIZE: "1" });
});
afterAll(async () => {
  await broker?.stop();
  await log?.stop();
});

const keyed = (sessionId: string, key: string) =>
  broker.client.provision({ fork: undefined, key, sessionId, resources: undefined, handKind: "" }, { deadlineMs: 60_000 });

async function ready(sessionId: string): Promise<string[]> {
  const { sandboxes } = await broker.client.listSandboxes({ sessionId, includeEnded: false });
  return sandboxes.map((s) => s.sandboxId);
}

/** Lines `ran` in file `runs` of each of the sandboxes. */
async function runs(sessionId: string, sandboxIds: readonly string[]): Promise<number[]> {
  return Promise.all(
    sandboxIds.map(async (id) => {
      const res = await run(broker.client, id, "bash", { command: "cat runs 2>/dev/null || true" }, { sessionId });
      return res.output.split("\n").filter((l) => l.trim() === "ran").length;
    }),
  );
}

describe("a tool call", () => {
  it("runs once per session, though repeats name other sandboxes of it, at once or later", async () => {
    const sessionId = await newSession(log.client);
    const [a, b, c] = [await provision(broker.client, sessionId), await provision(broker.client, sessionId), await provision(broker.client, sessionId)];
    const id = callId();
    const call = (sandboxId: string) => run(broker.client, sandboxId, "bash", { command: "echo ran >> runs; echo done" }, { sessionId, callId: id });
    const [first, second] = await Promise.all([call(a), call(b)]);
    const later = await call(c);
    expect([first, second, later].map((r) => r.output.trim())).toEqual(["done", "done", "done"]);
    expect([first, second, later].filter((r) => !r.replayed)).toHaveLength(1);
    expect((await runs(sessionId, [a, b, c])).reduce((x, y) => x + y)).toBe(1);
    // The same call id in another session is another call.
    const other = await newSession(log.client);
    const there = await provision(broker.client, other);
    expect((await run(broker.client, there, "bash", { command: "echo ran >> runs" }, { sessionId: other, callId: id })).replayed).toBe(false);
    expect(await runs(other, [there])).toEqual([1]);
  }, 60_000);

  it("that ran twice before the ledger was keyed by session keeps its first run's row (migration 002)", async () => {
    const database = await createTestDatabase("mh_sbx_migrate");
    const db = createPgDb(database.url, 1, () => undefined);
    const only001 = await mkdtemp(join(tmpdir(), "mh-sbx-migrations-"));
    try {
      await copyFile(new URL("001_sandbox_broker.sql", MIGRATIONS), join(only001, "001_sandbox_broker.sql"));
      await migrate(db, "sandbox-broker", pathToFileURL(`${only001}/`));
      for (const id of ["sbx_a", "sbx_b"]) {
        await db.query("INSERT INTO sandboxes (sandbox_id, session_id, broker_id, driver, state, resources) VALUES ($1, 'sesn_1', 'b', 'bubblewrap', 1, ''::bytea)", [id]);
      }
      // The race's trace: one tool_use run in two sandboxes, the second a moment later.
      await db.query(`INSERT INTO sandbox_calls (sandbox_id, call_id, session_id, name, status, incarnation, started_at)
                      VALUES ('sbx_b', 'toolu_1', 'sesn_1', 'bash', 'done', 'i', now() - interval '1 second'),
                             ('sbx_a', 'toolu_1', 'sesn_1', 'bash', 'done', 'i', now()),
                             ('sbx_a', 'toolu_2', 'sesn_1', 'bash', 'done', 'i', now())`);
      expect(await migrate(db, "sandbox-broker", MIGRATIONS)).toEqual([2]);
      const { rows } = await db.query<{ sandbox_id: string; call_id: string }>("SELECT sandbox_id, call_id FROM sandbox_calls ORDER BY call_id");
      expect(rows).toEqual([{ sandbox_id: "sbx_b", call_id: "toolu_1" }, { sandbox_id: "sbx_a", call_id: "toolu_2" }]);
    } finally {
      await rm(only001, { recursive: true, force: true });
      await db.end();
      await database.drop();
    }
  });
});

describe("provisioning with a key", () => {
  it("gives racing Provisions one sandbox, and a later one the same while it is ready", async () => {
    const sessionId = await newSession(log.client);
    const raced = await Promise.all([keyed(sessionId, "default"), keyed(sessionId, "default"), keyed(sessionId, "default")]);
    const ids = new Set(raced.map((r) => r.sandbox!.sandboxId));
    expect(ids.size).toBe(1);
    const [kept] = [...ids];
    expect(await ready(sessionId)).toEqual([kept]);
    expect((await keyed(sessionId, "default")).sandbox!.sandboxId).toBe(kept);
    // Another key, or none, is another sandbox; another session's key is its own.
    const other = (await keyed(sessionId, "hand:x")).sandbox!.sandboxId;
    expect(other).not.toBe(kept);
    const elsewhere = await newSession(log.client);
    expect((await keyed(elsewhere, "default")).sandbox!.sandboxId).not.toBe(kept);
    // A sandbox that ended frees its key.
    await broker.client.release({ sandboxId: kept!, sessionId });
    const next = (await keyed(sessionId, "default")).sandbox!;
    expect(next.sandboxId).not.toBe(kept);
    expect(next.state).toBe(SandboxState.SANDBOX_STATE_READY);
  }, 60_000);

  it("refuses a key it cannot store, naming it", async () => {
    const sessionId = await newSession(log.client);
    expect(await rejection(keyed(sessionId, "k\u0000"))).toMatchObject({ code: "INVALID_ARGUMENT", field: "key" });
    expect(await rejection(keyed(sessionId, "k".repeat(257)))).toMatchObject({ code: "INVALID_ARGUMENT", field: "key" });
  });
});
