import { readFileSync, readdirSync } from "node:fs";
import pg from "pg";
import { Event } from "@metaharness/proto";
import { shardOf } from "@metaharness/session-log";
import { startBenchLog, benchEvent } from "./lib/service.js";
import { closedLoop } from "./lib/load.js";
import { summarize } from "./lib/stats.js";

function cpuByComm(): Map<string, number> {
  const m = new Map<string, number>();
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const s = readFileSync(`/proc/${pid}/stat`, "utf8");
      const comm = s.slice(s.indexOf("(") + 1, s.lastIndexOf(")"));
      const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
      const t = Number(f[11]) + Number(f[12]);
      const key = pid === String(process.pid) ? "bench-node" : comm.startsWith("postgres") ? "postgres" : comm;
      m.set(key, (m.get(key) ?? 0) + t);
    } catch {}
  }
  return m;
}
function total(): number { const l = readFileSync("/proc/stat","utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number); return l.reduce((a,b)=>a+b,0) - (l[3]??0) - (l[4]??0); }

async function withSampling<T>(url: string, label: string, fn: () => Promise<T>): Promise<T> {
  const mon = new pg.Client({ connectionString: url }); await mon.connect();
  const waits = new Map<string, number>(); let stop = false; let samples = 0;
  const sampler = (async () => { while (!stop) { const { rows } = await mon.query<{ w: string; n: string }>(
    "select coalesce(wait_event_type||':'||wait_event,'CPU') w, count(*) n from pg_stat_activity where datname=current_database() and state='active' and pid<>pg_backend_pid() group by 1"); samples++;
    for (const r of rows) waits.set(r.w, (waits.get(r.w) ?? 0) + Number(r.n)); await new Promise(r => setTimeout(r, 5)); } })();
  const c0 = cpuByComm(); const t0 = total(); const w0 = Date.now();
  const res = await fn();
  const c1 = cpuByComm(); const t1 = total(); const secs = (Date.now() - w0) / 1000;
  stop = true; await sampler; await mon.end();
  const cpu = [...c1].map(([k, v]) => [k, (v - (c0.get(k) ?? 0)) / secs]).filter(([, v]) => (v as number) > 2).sort((a, b) => (b[1] as number) - (a[1] as number));
  console.log(`[${label}] cpu% of one core by process over ${secs.toFixed(1)}s:`, cpu.map(([k, v]) => `${k}=${(v as number).toFixed(0)}`).join(" "), `machine busy=${((t1-t0)/secs).toFixed(0)}% of 200`);
  console.log(`[${label}] avg active backends by wait:`, [...waits].sort((a,b)=>b[1]-a[1]).map(([k, v]) => `${k}=${(v / samples).toFixed(2)}`).join(" "));
  return res;
}

const relay = process.argv[2] ?? "false";
const b = await startBenchLog({ MH_RELAY_ENABLED: relay });
try {
  const ids = await b.newSessions(16);
  const url = b.log.db.url;
  const r = await withSampling(url, `grpc relay=${relay}`, () => closedLoop({ workers: 16, warmupMs: 1000, measureMs: 5000,
    prepare: (w) => ({ sessionId: ids[w]!, event: benchEvent() }), op: async (_w, req) => { await b.client.emitEvent(req); } }));
  const s = summarize(r.latencies); console.log(`grpc: ${r.opsPerSecond.toFixed(0)}/s p50=${s.p50.toFixed(2)} p99=${s.p99.toFixed(2)}`);

  for (const notify of [true, false]) {
    const pool = new pg.Pool({ connectionString: url, max: 20 });
    const tx = async (sessionId: string) => {
      const c = await pool.connect();
      try {
        await c.query("BEGIN");
        const e = benchEvent();
        await c.query(`SELECT s.last_seq, s.lease_epoch, s.status, d.body AS dup_body FROM sessions s LEFT JOIN events d ON d.session_id = s.session_id AND d.event_id = ANY($2::text[]) WHERE s.session_id = $1 FOR UPDATE OF s`, [sessionId, [e.id]]);
        const { rows } = await c.query<{ last_seq: string }>("select last_seq from sessions where session_id=$1", [sessionId]);
        const seq = Number(rows[0]!.last_seq) + 1;
        await c.query(`WITH ins AS (INSERT INTO events (session_id, seq, event_id, type, created_at, body) SELECT $1, s, i, t, $5, b FROM unnest($2::bigint[], $3::text[], $4::text[], $6::bytea[]) AS x(s, i, t, b) RETURNING seq),
          queued AS (INSERT INTO outbox (shard, session_id, seq) SELECT $7, $1, seq FROM ins)
          UPDATE sessions SET last_seq = $8::bigint, status = coalesce($9::smallint, status), updated_at = $5 WHERE session_id = $1
          RETURNING ${notify ? "pg_notify('mh_events', $1 || ':' || $8::bigint::text)" : "1"}`,
          [sessionId, [seq], [e.id], [e.type], new Date(), [Buffer.from(Event.encode({ ...e, seq, sessionId }).finish())], shardOf(sessionId), seq, null]);
        await c.query("COMMIT");
      } finally { c.release(); }
    };
    const r2 = await withSampling(url, `sql notify=${notify}`, () => closedLoop({ workers: 16, warmupMs: 1000, measureMs: 5000, prepare: (w) => ids[w]!, op: (_w, id) => tx(id) }));
    const s2 = summarize(r2.latencies); console.log(`sql notify=${notify}: ${r2.opsPerSecond.toFixed(0)}/s p50=${s2.p50.toFixed(2)} p99=${s2.p99.toFixed(2)}`);
    await pool.end();
  }
} finally { await b.stop(); }
process.exit(0);
