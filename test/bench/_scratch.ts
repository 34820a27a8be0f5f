import { startBenchLog, benchEvent } from "./lib/service.js";
import { populateSession, bulkEventId } from "./lib/populate.js";
import { textOf } from "../support/events.js";
const b = await startBenchLog({ MH_RELAY_ENABLED: "false" });
try {
  const [sid] = await b.newSessions(1);
  const t = await populateSession(b.log.db.url, sid!, 1_000_000, benchEvent());
  console.log(t);
  const r = await b.client.getEvents({ sessionId: sid!, position: { $case: "afterSeq", value: 500_000 }, limit: 100, types: [] });
  console.log(r.events.length, r.events[0]?.seq, r.events[0]?.id, bulkEventId(500001), r.events[99]?.seq, r.lastSeq, r.hasMore, textOf(r.events[0]).length);
  const pg = (await import("pg")).default;
  const pool = new pg.Pool({ connectionString: b.log.db.url });
  for (let i = 0; i < 2; i++) {
    const t0 = performance.now();
    const { rows } = await pool.query<{ body: Buffer }>("SELECT body FROM events WHERE session_id=$1 ORDER BY seq", [sid]);
    console.log("naive", rows.length, performance.now() - t0, process.memoryUsage().heapUsed / 2**20);
  }
  await pool.end();
} finally { await b.stop(); }
process.exit(0);
