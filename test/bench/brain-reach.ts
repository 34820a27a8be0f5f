/**
 * How far one brain goes (issue 31): one harness process (its built dist/main.js) with the session
 * log as its own process on the real Postgres, driving N mostly-waiting sessions. Every session
 * is watched for its whole life (WatchEvents with deltas, as a UI does) and takes a turn now and
 * then: a fixed aggregate pace of user messages (each sent with EmitEvent then Wake, as the
 * gateway does) spread over the sessions that are not mid-turn, so what grows with N is what the
 * brain holds, not the turns per second. Each turn's platform overhead is its TTFT (send -> first
 * token delta at the watcher) less the offline model's own TTFT of that request, compared with
 * the figure of one session alone in the same run (target: within 2x at 500 sessions). Memory per
 * session is the harness process's resident set (/proc) and V8 heap after its last GC (--trace-gc)
 * at N less at 0 (started, no session yet), over N. `npm run bench -- brain-reach` runs
 * N = 1, 50, 100, 250, 500; `-- brain-reach --quick` runs 1, 10, 25 briefly.
 */
import os from "node:os";
import { defineScenario } from "@metaharness/offline-model";
import { SessionLogClient, SessionLogService } from "@metaharness/proto";
import { createClient, promisify } from "@metaharness/service-kit/grpc";
import { userMessage } from "../support/events.js";
import { EVENT_TEXT } from "./lib/service.js";
import { atMost, ms, runIfMain, type Bench, type BenchReport } from "./lib/report.js";
import { nowMs, summarize, type Summary } from "./lib/stats.js";
import { residentBytes, startScaleStack, type ScaleStack } from "./scale-stack.js";
import { perTurn } from "./lib/call-counts.js";

const SCENARIO = "brain-reach";
const MODEL_TTFT_MS = 200;
/** Sessions per gRPC channel of the driving clients (one HTTP/2 connection each). */
const PER_CHANNEL = 50;
const FULL = { levels: [1, 50, 100, 250, 500], turnsPerSecond: 3, seconds: 30, rampConcurrency: 12 };
const QUICK = { levels: [1, 10, 25], turnsPerSecond: 3, seconds: 8, rampConcurrency: 8 };
const TARGET_RATIO = 2;

interface Memory {
  readonly rss: number;
  readonly anon: number;
  /** V8 heap used after the harness's latest GC, bytes. */
  readonly heap: number;
}

interface Level {
  readonly sessions: number;
  readonly turnsPerSecond: number;
  readonly seconds: number;
  /** Mean seconds between two turns of one session at this pace. */
  readonly intervalSeconds: number;
  readonly turns: number;
  readonly ttftMs: Summary;
  readonly overheadMs: Summary;
  readonly memory: Memory;
  /**
   * Renewal calls the session log served per second over the level's window: RenewLease (one a
   * lease and TTL/3, a harness before batching) and RenewLeases (an instance's leases due together).
   */
  readonly renewalsPerSecond: number;
  /** Postgres transactions per second in the log's database over the window (each renewal call is one statement). */
  readonly transactionsPerSecond: number;
  readonly load: readonly [number, number];
}

/** The heap after the latest GC line --trace-gc printed ("Scavenge 12.3 (15.0) -> 10.1 (16.0) MB"). */
function heapAfterGc(output: string): number {
  const all = [...output.matchAll(/(?:Scavenge|Mark-Compact|Mark-sweep)[^\n]*?->\s*([\d.]+)\s*\(/g)];
  const last = all[all.length - 1]?.[1];
  return last === undefined ? NaN : Number(last) * 1024 * 1024;
}

function memoryOf(stack: ScaleStack): Memory {
  const h = stack.harnesses[0]!;
  return { ...residentBytes(h.child.pid!), heap: heapAfterGc(h.output()) };
}

interface Session {
  readonly id: string;
  busy: boolean;
  turns: number;
  /** The turn in flight: its start, the first delta's time, and its end. */
  pending?: { t0: number; ttft: number; done: () => void };
  close(): void;
}

async function run(): Promise<BenchReport> {
  const base = process.argv.includes("--quick") ? QUICK : FULL;
  // `--levels=1,200`: those levels only; `--linger=MS`: the harness's MH_IDLE_LINGER_MS (its
  // default otherwise), so that a run with a long linger (every session that took a turn held)
  // against one with 0 gives a lingering session's memory and renewals.
  const levelsArg = process.argv.find((a) => a.startsWith("--levels="));
  const lingerArg = process.argv.find((a) => a.startsWith("--linger="))?.slice("--linger=".length);
  const phase = { ...base, levels: levelsArg === undefined ? base.levels : levelsArg.slice("--levels=".length).split(",").map(Number) };
  const harnessEnv: Record<string, string> = lingerArg === undefined ? {} : { MH_IDLE_LINGER_MS: lingerArg };
  const scenarios = [defineScenario(SCENARIO, [{ text: EVENT_TEXT, ttftMs: MODEL_TTFT_MS, tokensPerSecond: 0 }], { onExhausted: "repeat-last" })];
  const stack = await startScaleStack({ scenarios, harnesses: 1, gateway: false, kafkaWake: false, harnessNodeArgs: ["--trace-gc"], harnessEnv });
  const levels: Level[] = [];
  const channels: Array<{ close(): void }> = [];
  const sessions: Session[] = [];
  try {
    const memory0 = memoryOf(stack);
    const logFor = (i: number) => {
      const k = Math.floor(i / PER_CHANNEL);
      while (channels.length <= k) {
        channels.push(createClient(SessionLogClient, `127.0.0.1:${stack.log.port}`, { bearerToken: stack.logAdminToken, channelOptions: { "mh.bench_channel": channels.length } }));
      }
      return promisify(channels[k] as InstanceType<typeof SessionLogClient>, SessionLogService);
    };
    const modelTtft = (marker: string): number => {
      const rec = stack.model.requests.findLast((r) => JSON.stringify(r.body).includes(marker));
      return rec?.firstDeltaAt === undefined || rec.receivedAt === undefined ? NaN : rec.firstDeltaAt - rec.receivedAt;
    };
    const open = async (i: number): Promise<Session> => {
      const client = logFor(i);
      const { session } = await client.createSession({ sessionId: "", metadata: undefined });
      const controller = new AbortController();
      const s: Session = { id: session!.sessionId, busy: false, turns: 0, close: () => controller.abort() };
      void (async () => {
        for await (const msg of client.watchEvents({ sessionId: s.id, afterSeq: 0, types: [], includeDeltas: true, batchDeltas: false, fromHead: false }, { signal: controller.signal })) {
          const p = s.pending;
          if (p === undefined) continue;
          if (msg.delta !== undefined && Number.isNaN(p.ttft)) p.ttft = nowMs() - p.t0;
          if (msg.event?.type === "session.status_idle") p.done();
        }
      })().catch(() => undefined);
      return s;
    };
    /** One turn of `s`: its TTFT and the platform's share, ms. */
    const turn = async (s: Session): Promise<{ ttft: number; overhead: number }> => {
      s.busy = true;
      s.turns += 1;
      const marker = `<${s.id}#${s.turns}>`;
      const client = logFor(sessions.indexOf(s));
      try {
        const finished = new Promise<void>((resolve) => (s.pending = { t0: nowMs(), ttft: NaN, done: resolve }));
        await client.emitEvent({ sessionId: s.id, event: userMessage(`[scenario:${SCENARIO}] turn ${marker}`) });
        await stack.harnessClient.wake({ sessionId: s.id });
        await finished;
        const ttft = s.pending!.ttft;
        return { ttft, overhead: ttft - modelTtft(marker) };
      } finally {
        s.pending = undefined;
        s.busy = false;
      }
    };
    for (const n of phase.levels) {
      // New sessions each take a first turn (so the harness has driven every one), a few at a time.
      const fresh = await Promise.all(Array.from({ length: n - sessions.length }, (_, j) => open(sessions.length + j)));
      sessions.push(...fresh);
      for (let j = 0; j < fresh.length; j += phase.rampConcurrency) await Promise.all(fresh.slice(j, j + phase.rampConcurrency).map((s) => turn(s)));
      const loadBefore = os.loadavg()[0] ?? NaN;
      const ttfts: number[] = [];
      const overheads: number[] = [];
      const inFlight: Array<Promise<void>> = [];
      const [callsBefore, xactsBefore] = await Promise.all([stack.logCalls(), stack.logTransactions()]);
      const t0 = nowMs();
      // The pace: one turn due every 1/rate s, taken by a random session not mid-turn (none idle: skipped, and counted as a turn short).
      for (let k = 0; nowMs() - t0 < phase.seconds * 1000; k++) {
        const due = t0 + (k * 1000) / phase.turnsPerSecond;
        while (nowMs() < due) await new Promise((r) => setTimeout(r, Math.max(1, due - nowMs())));
        const idle = sessions.filter((s) => !s.busy);
        const s = idle[Math.floor(Math.random() * idle.length)];
        if (s === undefined) continue;
        inFlight.push(
          turn(s).then((t) => {
            ttfts.push(t.ttft);
            overheads.push(t.overhead);
          }),
        );
      }
      await Promise.all(inFlight);
      const [callsAfter, xactsAfter] = await Promise.all([stack.logCalls(), stack.logTransactions()]);
      const calls = perTurn(callsBefore, callsAfter, 1);
      const windowSeconds = (nowMs() - t0) / 1000;
      const level: Level = {
        renewalsPerSecond: ((calls["RenewLease"] ?? 0) + (calls["RenewLeases"] ?? 0)) / windowSeconds,
        transactionsPerSecond: (xactsAfter - xactsBefore) / windowSeconds,
        sessions: n,
        turnsPerSecond: phase.turnsPerSecond,
        seconds: phase.seconds,
        intervalSeconds: n / phase.turnsPerSecond,
        turns: ttfts.length,
        ttftMs: summarize(ttfts.filter((x) => !Number.isNaN(x))),
        overheadMs: summarize(overheads.filter((x) => !Number.isNaN(x))),
        memory: memoryOf(stack),
        load: [loadBefore, os.loadavg()[0] ?? NaN],
      };
      console.log(`  ${n} sessions: ${level.turns} turns, overhead p50 ${ms(level.overheadMs.p50)} ms, RSS ${(level.memory.rss / 2 ** 20).toFixed(1)} MiB, heap ${(level.memory.heap / 2 ** 20).toFixed(1)} MiB, ${level.renewalsPerSecond.toFixed(1)} renewal calls/s, ${level.transactionsPerSecond.toFixed(1)} Postgres transactions/s, driving ${await stack.harnessClient.listActive({}).then((a) => a.sessions.length)}`);
      levels.push(level);
    }
    return report(levels, memory0, phase);
  } finally {
    for (const s of sessions) s.close();
    for (const c of channels) c.close();
    await stack.stop();
  }
}

function report(levels: readonly Level[], memory0: Memory, phase: typeof FULL): BenchReport {
  const single = levels.find((l) => l.sessions === 1);
  const mib = (b: number): string => (Number.isFinite(b) ? (b / 2 ** 20).toFixed(1) : "-");
  const kib = (b: number): string => (Number.isFinite(b) ? (b / 1024).toFixed(1) : "-");
  const ratio = (a: number, b: number | undefined): string => (b === undefined || !Number.isFinite(a / b) ? "-" : (a / b).toFixed(2));
  const params = `one harness process, model TTFT ${MODEL_TTFT_MS} ms, ${phase.turnsPerSecond} turns/s in all over the sessions not mid-turn, ${phase.seconds} s per level after each new session's first turn`;
  const last = levels[levels.length - 1];
  return {
    name: "brain-reach",
    title: "how many mostly-waiting sessions one harness process drives",
    tables: [
      {
        title: `the platform's share of TTFT (TTFT less the model's own) as one brain holds more sessions (${params})`,
        columns: ["sessions", "turns/s (all)", "s between a session's turns", "turns", "TTFT p50 / p95 / p99 ms", "share p50 / p95 / p99 ms", "share p50 / 1 session's", "share p95 / 1 session's", "load 1m before-after"],
        rows: levels.map((l) => [
          l.sessions,
          l.turnsPerSecond,
          l.intervalSeconds.toFixed(1),
          l.turns,
          `${ms(l.ttftMs.p50)} / ${ms(l.ttftMs.p95)} / ${ms(l.ttftMs.p99)}`,
          `${ms(l.overheadMs.p50)} / ${ms(l.overheadMs.p95)} / ${ms(l.overheadMs.p99)}`,
          ratio(l.overheadMs.p50, single?.overheadMs.p50),
          ratio(l.overheadMs.p95, single?.overheadMs.p95),
          `${l.load[0].toFixed(1)}-${l.load[1].toFixed(1)}`,
        ]),
      },
      {
        title: `the harness process's memory (at 0 sessions: RSS ${mib(memory0.rss)} MiB, anonymous ${mib(memory0.anon)} MiB, heap after GC ${mib(memory0.heap)} MiB), and per session: (at N - at 0) / N`,
        columns: ["sessions", "RSS MiB", "RssAnon MiB", "heap after GC MiB", "RSS KiB / session", "RssAnon KiB / session", "heap KiB / session", "RSS KiB / session past the 1st", "heap KiB / session past the 1st"],
        rows: levels.map((l) => [
          l.sessions,
          mib(l.memory.rss),
          mib(l.memory.anon),
          mib(l.memory.heap),
          kib((l.memory.rss - memory0.rss) / l.sessions),
          kib((l.memory.anon - memory0.anon) / l.sessions),
          kib((l.memory.heap - memory0.heap) / l.sessions),
          // Against one session's level: the start-up's warm-up (JIT, pools, the first turn's modules) is not a session's.
          single === undefined || l === single ? "-" : kib((l.memory.rss - single.memory.rss) / (l.sessions - 1)),
          single === undefined || l === single ? "-" : kib((l.memory.heap - single.memory.heap) / (l.sessions - 1)),
        ]),
      },
    ],
    checks:
      last === undefined || single === undefined || last === single
        ? []
        : [atMost(`the platform's share p50 at ${last.sessions} sessions over one session's, same run (n=${last.overheadMs.n})`, last.overheadMs.p50 / single.overheadMs.p50, TARGET_RATIO, "x")],
    notes: [
      "the session log and the harness are each their own process (built dist/main.js); the offline model and the driving gRPC clients (a watcher per session, as a UI) run in the bench process",
      "TTFT is from the send of EmitEvent(user.message), then Wake (as the gateway does both), to the first token delta at the session's watcher; the platform's share subtracts the offline model's own TTFT (its receipt of the request to its first delta written) of that request",
      "the 1-session level's pace is back to back (a turn is due before the last one ends); the others are the stated seconds apart on average",
      "the heap is V8's used heap after the harness's latest GC (a scavenge or a full collection, from --trace-gc), so it moves with the GC's timing; RSS includes what V8 has not returned to the system",
    ],
    data: { phase, memory0, levels },
  };
}

export const brainReachBench: Bench = { name: "brain-reach", title: "how many mostly-waiting sessions one harness process drives", run };

runIfMain(brainReachBench, import.meta.url);
