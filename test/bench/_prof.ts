import { startBenchLog, benchEvent } from "./lib/service.js";
import { closedLoop } from "./lib/load.js";
const b = await startBenchLog({ MH_RELAY_ENABLED: "false" });
try {
  const ids = await b.newSessions(16);
  const r = await closedLoop({ workers: 16, warmupMs: 1000, measureMs: 5000, prepare: (w) => ({ sessionId: ids[w]!, event: benchEvent() }), op: async (_w, req) => { await b.client.emitEvent(req); } });
  console.log("ops/s", r.opsPerSecond, "cpu", process.cpuUsage());
} finally { await b.stop(); }
