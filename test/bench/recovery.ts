/**
 * Recovery and restart of the brains (issue 25, holes 6 and 7): three harness processes drive
 * tool-heavy sessions (a bash call per model step, forever) on the real session log, sandbox
 * broker and Kafka; one holding sessions is killed with -9 at random, N times, and started again
 * at once. Per kill it measures, for each session the dead one held:
 *  - kill -> lease taken over by another instance (polled every 10 ms),
 *  - kill -> the session's next event (its created_at, the log's clock: this machine's),
 * and for the restarted process: spawn -> serving (a Wake answered) and spawn -> wake group
 * joined (its "joined the wake group" line). The floor, measured in the same run: SIGTERM
 * instead of -9, where the lease is given back on the way out and no expiry is waited for.
 * Leases lost by live instances (a renewal too late on a loaded machine) are counted: the price
 * of a short TTL. Each parameter set (lease TTL : sweep period) runs on a fresh stack:
 * MH_BENCH_RECOVERY_CONFIGS="1000:100,3000:500" (default: the harness defaults, 3000:500),
 * MH_BENCH_RECOVERY_KILLS (default 20).
 */
import { randomBytes } from "node:crypto";
import { defineScenario } from "@metaharness/offline-model";
import { startBrain, startDoomedHarness, type Brain, type DoomedHarness } from "../support/harness.js";
import { KAFKA_BROKERS } from "../support/topics.js";
import { userMessage } from "../support/events.js";
import { atMost, exactly, latencyCells, LATENCY_COLUMNS, runIfMain, type Bench, type BenchReport, type Check, type Table } from "./lib/report.js";
import { summarize, type Summary } from "./lib/stats.js";

const HARNESSES = 3;
const SESSIONS = 9;
const KILLS = Number(process.env["MH_BENCH_RECOVERY_KILLS"] ?? "20");
const TERMS = 5;
const CONFIGS = (process.env["MH_BENCH_RECOVERY_CONFIGS"] ?? "3000:500").split(",").map((c) => {
  const [ttl, sweep] = c.split(":").map(Number);
  if (!Number.isInteger(ttl) || !Number.isInteger(sweep)) throw new Error(`MH_BENCH_RECOVERY_CONFIGS: "${c}" is not ttl:sweep`);
  return { ttlMs: ttl!, sweepMs: sweep! };
});
/** The Kafka group's session timeout the harnesses run with (their default unless set). */
const GROUP_SESSION_TIMEOUT_MS = process.env["MH_BENCH_KAFKA_SESSION_TIMEOUT_MS"];
const POLL_MS = 10;
const TARGET = { nextEventP50: 1000, nextEventP99: 2000 };

interface Figures {
  readonly config: { ttlMs: number; sweepMs: number };
  readonly takeover: number[];
  readonly nextEvent: number[];
  readonly serving: number[];
  readonly joined: number[];
  readonly termNextEvent: number[];
  readonly termTakeover: number[];
  readonly spuriousLosses: number;
  readonly unanswered: number;
  readonly missing: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function waitUntil<T>(probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T | undefined> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const v = await probe();
    if (v !== undefined) return v;
    await sleep(POLL_MS);
  }
  return undefined;
}

class Rig {
  private constructor(
    readonly brain: Brain,
    readonly env: Record<string, string>,
    readonly procs: DoomedHarness[],
  ) {}

  static async start(ttlMs: number, sweepMs: number): Promise<Rig> {
    const brain = await startBrain({
      broker: true,
      scenarios: [
        defineScenario("busy", [{ toolUses: [{ name: "bash", input: { command: "echo step >> steps; wc -l < steps" } }], ttftMs: 30, tokensPerSecond: 2000 }], {
          onExhausted: "repeat-last",
        }),
      ],
      logEnv: { MH_RELAY_ENABLED: "true", MH_RELAY_POLL_MS: "100" },
      // The brain's own in-process instance neither sweeps, takes freed sessions, nor consumes: the processes drive.
      env: { MH_SWEEP_MS: "600000", MH_WAKE_FREED: "false" },
    });
    const env = {
      MH_SANDBOX_BROKER_ADDR: brain.broker!.address,
      MH_SANDBOX_BROKER_TOKEN_FILE: brain.broker!.tokens.tokenFile.harness,
      MH_LEASE_TTL_MS: String(ttlMs),
      MH_SWEEP_MS: String(sweepMs),
      MH_WAKE_FREED: "true",
      MH_KAFKA_WAKE: "true",
      MH_KAFKA_BROKERS: KAFKA_BROKERS,
      MH_KAFKA_TOPIC: brain.log.topic,
      MH_KAFKA_GROUP: `mh-bench-recovery-${randomBytes(4).toString("hex")}`,
      MH_LOG_LEVEL: "info",
      ...(GROUP_SESSION_TIMEOUT_MS === undefined ? {} : { MH_KAFKA_SESSION_TIMEOUT_MS: GROUP_SESSION_TIMEOUT_MS }),
    };
    const rig = new Rig(brain, env, []);
    for (let i = 0; i < HARNESSES; i++) rig.procs.push(await rig.spawn(i));
    return rig;
  }

  spawn(i: number): Promise<DoomedHarness> {
    return startDoomedHarness(this.brain, { ...this.env, MH_INSTANCE_ID: `h${i + 1}` });
  }

  async held(i: number): Promise<string[]> {
    return (await this.procs[i]!.rpc.listActive({})).sessions.map((s) => s.sessionId);
  }

  async lastSeq(sessionId: string): Promise<number> {
    return (await this.brain.log.client.getSession({ sessionId })).session?.lastSeq ?? 0;
  }

  async stop(): Promise<void> {
    for (const p of this.procs) await p.kill();
    await this.brain.stop();
  }
}

/** Spawn -> first Wake answered (any answer but "unavailable"), and spawn -> joined, from the process's own lines. */
async function restart(rig: Rig, i: number): Promise<{ serving: number; joined: number | undefined }> {
  const spawnedAt = Date.now();
  const proc = await rig.spawn(i);
  rig.procs[i] = proc;
  let serving = Number.NaN;
  for (;;) {
    try {
      await proc.rpc.wake({ sessionId: "sesn_00000000000000000000000000" }, { deadlineMs: 500 });
      serving = Date.now() - spawnedAt;
      break;
    } catch (err) {
      if ((err as { code?: string }).code !== "UNAVAILABLE") {
        serving = Date.now() - spawnedAt;
        break;
      }
      await sleep(POLL_MS);
    }
  }
  const line = await waitUntil(() => Promise.resolve(proc.output().split("\n").find((l) => l.includes('"joined the wake group"'))), 60_000);
  const joinedAt = line === undefined ? undefined : Date.parse((JSON.parse(line) as { time: string }).time);
  return { serving, joined: joinedAt === undefined ? undefined : joinedAt - spawnedAt };
}

/** For each session `victim` held: kill -> lease elsewhere, kill -> next event (its created_at). */
async function follow(rig: Rig, victim: string, sessions: ReadonlyMap<string, number>, killedAt: number, into: { takeover: number[]; nextEvent: number[] }): Promise<number> {
  let missing = 0;
  await Promise.all(
    [...sessions].map(async ([sessionId, seq]) => {
      const took = await waitUntil(async () => {
        const holder = (await rig.brain.log.client.getSession({ sessionId })).session?.lease?.holder;
        return holder !== undefined && holder !== victim ? Date.now() - killedAt : undefined;
      }, 30_000);
      const next = await waitUntil(async () => {
        const { events } = await rig.brain.log.client.getEvents({ sessionId, position: { $case: "afterSeq", value: seq }, limit: 1, types: [] });
        const at = events[0]?.createdAt;
        return at === undefined ? undefined : at.getTime() - killedAt;
      }, 30_000);
      if (took === undefined || next === undefined) missing += 1;
      else {
        into.takeover.push(took);
        into.nextEvent.push(next);
      }
    }),
  );
  return missing;
}

async function measure(ttlMs: number, sweepMs: number): Promise<Figures> {
  const rig = await Rig.start(ttlMs, sweepMs);
  try {
    const sessions: string[] = [];
    for (let s = 0; s < SESSIONS; s++) sessions.push(await rig.brain.createSession());
    for (const [s, sessionId] of sessions.entries()) {
      await rig.brain.log.client.emitEvent({ sessionId, event: userMessage("[scenario:busy] keep working") });
      await rig.procs[s % HARNESSES]!.rpc.wake({ sessionId });
    }
    await sleep(3000);
    const fig = { takeover: [] as number[], nextEvent: [] as number[], serving: [] as number[], joined: [] as number[] };
    const term = { takeover: [] as number[], nextEvent: [] as number[] };
    let missing = 0;
    let unanswered = 0;
    for (let k = 0; k < KILLS + TERMS; k++) {
      const signal = k < KILLS ? "SIGKILL" : "SIGTERM";
      // A random instance among those holding sessions.
      const holding = (await Promise.all(rig.procs.map(async (_, i) => ((await rig.held(i)).length > 0 ? i : -1)))).filter((i) => i >= 0);
      const i = holding[Math.floor(Math.random() * holding.length)];
      if (i === undefined) throw new Error("no instance holds a session");
      const held = new Map<string, number>();
      for (const sessionId of await rig.held(i)) held.set(sessionId, 0);
      const killedAt = Date.now();
      await rig.procs[i]!.kill(signal);
      // After the exit: what it appended is in the log; the next event is the successor's.
      for (const sessionId of held.keys()) held.set(sessionId, await rig.lastSeq(sessionId));
      const [r, m] = await Promise.all([restart(rig, i), follow(rig, `h${i + 1}`, held, killedAt, signal === "SIGKILL" ? fig : term)]);
      missing += m;
      if (signal === "SIGKILL") {
        fig.serving.push(r.serving);
        if (r.joined === undefined) unanswered += 1;
        else fig.joined.push(r.joined);
      }
      process.stderr.write(`  recovery ttl ${ttlMs} sweep ${sweepMs}: ${signal} ${k + 1}/${KILLS + TERMS} of h${i + 1} (${held.size} sessions), serving after ${r.serving} ms, joined after ${r.joined ?? "-"} ms\n`);
      await sleep(500 + Math.random() * 1500);
    }
    const lost = rig.procs.reduce((n, p) => n + p.output().split('"lease lost; stopping"').length - 1, 0);
    return { config: { ttlMs, sweepMs }, ...fig, termNextEvent: term.nextEvent, termTakeover: term.takeover, spuriousLosses: lost, unanswered, missing };
  } finally {
    await rig.stop();
  }
}

function tables(all: readonly Figures[]): Table[] {
  return all.map((f) => {
    const row = (what: string, s: Summary): (string | number)[] => [what, ...latencyCells(s)];
    return {
      title: `recovery, lease TTL ${f.config.ttlMs} ms, sweep ${f.config.sweepMs} ms (${HARNESSES} harnesses, ${SESSIONS} tool-heavy sessions, ${KILLS} kill -9 + ${TERMS} SIGTERM)`,
      columns: ["figure", ...LATENCY_COLUMNS],
      rows: [
        row("kill -9 -> lease taken over", summarize(f.takeover)),
        row("kill -9 -> the session's next event", summarize(f.nextEvent)),
        row("floor: SIGTERM -> lease taken over (released on the way out)", summarize(f.termTakeover)),
        row("floor: SIGTERM -> next event", summarize(f.termNextEvent)),
        row("restart -> serving (Wake answered)", summarize(f.serving)),
        row("restart -> wake group joined", summarize(f.joined)),
      ],
    };
  });
}

function checks(all: readonly Figures[]): Check[] {
  return all.flatMap((f) => {
    const at = `TTL ${f.config.ttlMs}/sweep ${f.config.sweepMs}`;
    const next = summarize(f.nextEvent);
    return [
      atMost(`${at}: kill -9 -> next event p50`, next.p50, TARGET.nextEventP50, "ms"),
      atMost(`${at}: kill -9 -> next event p99`, next.p99, TARGET.nextEventP99, "ms"),
      exactly(`${at}: sessions not resumed within 30 s`, f.missing, 0),
      exactly(`${at}: restarts that never joined the group in 60 s`, f.unanswered, 0),
      exactly(`${at}: leases lost by live instances (late renewals)`, f.spuriousLosses, 0),
    ];
  });
}

export const recoveryBench: Bench = {
  name: "recovery",
  title: "Brains killed with -9 and restarted: recovery and restart times",
  async run(): Promise<BenchReport> {
    const all: Figures[] = [];
    for (const { ttlMs, sweepMs } of CONFIGS) all.push(await measure(ttlMs, sweepMs));
    return {
      name: "recovery",
      title: recoveryBench.title,
      tables: tables(all),
      checks: checks(all),
      notes: [
        `parameters: ${HARNESSES} harness processes, ${SESSIONS} sessions (bash per model step, model TTFT 30 ms), ${KILLS} kill -9 and ${TERMS} SIGTERM, restart at once; Kafka group session timeout ${GROUP_SESSION_TIMEOUT_MS ?? "the harness default"} ms`,
        "lease takeover is polled every 10 ms; the next event is its created_at (Postgres's clock, this machine) minus the kill",
        "p99 of a few dozen samples is close to the maximum: read it with its n",
      ],
      data: { figures: all },
    };
  },
};

runIfMain(recoveryBench, import.meta.url);

