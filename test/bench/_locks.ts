import pg from "pg";
import { startBenchLog, benchEvent } from "./lib/service.js";
import { closedLoop } from "./lib/load.js";
const b = await startBenchLog({ MH_RELAY_ENABLED: "false" });
try {
  const ids = await b.newSessions(16);
  const mon = new pg.Client({ connectionString: b.log.db.url }); await mon.connect();
  const seen = new Map<string, number>(); let stop = false;
  const s = (async () => { await new Promise(r => setTimeout(r, 1500)); while (!stop) {
    const { rows } = await mon.query<{ k: string }>(`select l.locktype||' '||coalesce(l.classid::regclass::text,'-')||' objid='||coalesce(l.objid::text,'-')||' '||l.mode||' granted='||l.granted k
      from pg_locks l join pg_stat_activity a on a.pid=l.pid where a.datname=current_database() and l.locktype='object'`);
    for (const r of rows) seen.set(r.k, (seen.get(r.k) ?? 0) + 1); await new Promise(r => setTimeout(r, 20)); } })();
  await closedLoop({ workers: 16, warmupMs: 500, measureMs: 3000, prepare: (w) => ({ sessionId: ids[w]!, event: benchEvent() }), op: async (_w, req) => { await b.client.emitEvent(req); } });
  stop = true; await s; await mon.end();
  console.log(seen);
} finally { await b.stop(); }
process.exit(0);
