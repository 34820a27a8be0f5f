/**
 * What a text-only turn costs, per service: the session log and the harness each as its own
 * process (their built dist/main.js, as deployed), on the real Postgres and Kafka, the offline
 * model (a stated TTFT) and the driving clients in this process (turn-cpu-stack.ts). Sessions are
 * driven as a gateway and a UI would (turn-cpu-driver.ts): in a closed loop of N sessions of 1 or
 * more turns each, or as turns arriving at random (Poisson) at a stated rate. CPU is read from
 * /proc/<pid>/stat of each process over the measured window; CPU per turn is that over the turns
 * completed, and turns/s the machine's pace at that load. By default the bench plays the gateway
 * (its calls to the log and the harness over gRPC), so the gateway's CPU is not in the total;
 * `--via=sdk` drives the same loads as the issue states its target, through the official SDK with
 * the gateway as a process of its own (its CPU, and its database's Postgres, in the total; the share
 * measured at the SDK client: events.send to the first token preview frame).
 *
 * `npm run bench -- turn-cpu` runs 1 and 16 sessions of 1 and of 5 turns each, then the open loop
 * at the rate the 16-session loop of single turns reached and at half of it. Flags (`=` before a
 * value, run.ts reads bare words as benchmark names): `--sessions=1,16`, `--turns-per-session=1,5`,
 * `--open-rates=12,24` (turns/s; `--open-rates=` alone: no open loop; `--sessions=` alone: no
 * closed loop), `--pace=100` (the closed loops paced: their turns arrive at that many a second in
 * all, a Poisson process per session; `--sessions=64 --turns-per-session=5 --pace=100
 * --open-rates=` is the issue's load, checked against its p99), `--seconds=30`,
 * `--warmup=10`, `--quick` (3 s warm-up, 10 s measured), `--model-ttft=200` (the offline model's
 * TTFT in ms: shorter, a session's processes sit idle for less between its turns), `--linger=0` (the harness's
 * MH_IDLE_LINGER_MS, how long it keeps a session after its turn; its default otherwise), `--cpu-prof` (each service process's CPU
 * profile into bench/results/cpu-prof/), `--via=sdk` (see above; `--via=grpc` the default), `--counts` (what the session log, the harness and through the SDK the gateway
 * send and allocate per turn: gRPC calls, Postgres statements, socket writes, JS heap; not with
 * `--cpu-prof`), `--no-metrics` (the services without their /metrics, so
 * without the event-loop table), `--log-node-flags=`, `--harness-node-flags=`, `--gateway-node-flags=`
 * (node flags for that service's process, comma-separated, after those its package.json declares:
 * `--harness-node-flags=--max-semi-space-size=32`; for A/B runs of GC settings). After each window the floors are measured on the same services:
 * a gRPC round trip, a Postgres commit, the model's TTFT through the SDK (turn-cpu-floors.ts), and
 * the share's stretches are printed as multiples of them. The TTFT sweep (ttft-sweep.ts) runs its
 * 16-session phase as its last.
 */
import { mkdirSync } from "node:fs";
import { choiceFlag, hasFlag, listFlag, numbersFlag } from "./lib/flags.js";
import { ms, runIfMain, type Bench } from "./lib/report.js";
import type { TurnLoop, Via } from "./turn-cpu-driver.js";
import type { StackService } from "./turn-cpu-stack.js";
import { measureTurnCpu, type TurnCpuFigures } from "./turn-cpu-measure.js";
import { countsTable, cpuSplitTable, floorsTable, loadCell, loopDelayTable, multiplesTable, openLoopTable, runLabel, segmentTable, servicesMs, turnCpuChecks, turnCpuTable } from "./turn-cpu-tables.js";

export { loopLabel, type TurnLoop, type Via } from "./turn-cpu-driver.js";
export { measureTurnCpu, type TurnCpuFigures, type TurnCpuOptions } from "./turn-cpu-measure.js";
export { floorsTable, loopDelayTable, multiplesTable, turnCpuChecks, turnCpuTable } from "./turn-cpu-tables.js";

/** The per-service CPU phase: the model's TTFT, and how long it warms up and measures. */
export const CPU_PHASE = { modelTtftMs: 200, warmupSeconds: 10, seconds: 30 };

export const closedLoop = (sessions: number, turnsPerSession = 1, turnsPerSecond?: number): TurnLoop => ({
  kind: "closed",
  sessions,
  turnsPerSession,
  ...(turnsPerSecond === undefined ? {} : { turnsPerSecond }),
});

/** The phases `npm run bench -- turn-cpu` runs, from its flags. */
function plan(): { sessions: number[]; turnsPerSession: number[]; pace: number | undefined; openRates: number[] | undefined; phase: typeof CPU_PHASE; metrics: boolean; lingerMs: number | undefined; via: Via; counts: boolean; nodeFlags: Partial<Record<StackService, string[]>> } {
  const quick = hasFlag("quick");
  const seconds = numbersFlag("seconds")?.[0] ?? (quick ? 10 : CPU_PHASE.seconds);
  const warmupSeconds = numbersFlag("warmup")?.[0] ?? (quick ? 3 : CPU_PHASE.warmupSeconds);
  return {
    sessions: numbersFlag("sessions") ?? [1, 16],
    turnsPerSession: numbersFlag("turns-per-session") ?? [1, 5],
    pace: numbersFlag("pace")?.[0],
    openRates: numbersFlag("open-rates"),
    phase: { modelTtftMs: numbersFlag("model-ttft")?.[0] ?? CPU_PHASE.modelTtftMs, warmupSeconds, seconds },
    lingerMs: numbersFlag("linger")?.[0],
    metrics: !hasFlag("no-metrics"),
    via: choiceFlag<Via>("via", ["grpc", "sdk"], "grpc"),
    counts: hasFlag("counts"),
    nodeFlags: Object.fromEntries(
      (["session-log", "harness", "gateway"] as const).flatMap((s) => {
        const flags = listFlag(`${s === "session-log" ? "log" : s}-node-flags`);
        return flags === undefined || flags.length === 0 ? [] : [[s, flags]];
      }),
    ),
  };
}

export const turnCpuBench: Bench = {
  name: "turn-cpu",
  title: "CPU per text-only turn by process, TTFT and the platform's share against floors of the same run: closed loops of 1 and 16 sessions (1 and 5 turns each), an open loop",
  run: async () => {
    const cpuProfDir = hasFlag("cpu-prof") ? new URL("./results/cpu-prof/", import.meta.url).pathname : undefined;
    if (cpuProfDir !== undefined) mkdirSync(cpuProfDir, { recursive: true });
    const p = plan();
    const figs: TurnCpuFigures[] = [];
    const measure = async (loop: TurnLoop): Promise<void> => {
      const f = await measureTurnCpu({ loop, via: p.via, ...p.phase, metrics: p.metrics, counts: p.counts, nodeFlags: p.nodeFlags, ...(cpuProfDir === undefined ? {} : { cpuProfDir }), ...(p.lingerMs === undefined ? {} : { lingerMs: p.lingerMs }) });
      figs.push(f);
      console.log(`  ${runLabel(f)}: ${f.turnsPerSecond.toFixed(1)} turns/s, share p50 ${ms(f.overheadMs.p50)} ms, services ${ms(servicesMs(f))} ms CPU/turn (load ${loadCell(f)})`);
    };
    for (const turnsPerSession of p.turnsPerSession) for (const sessions of p.sessions) await measure(closedLoop(sessions, turnsPerSession, p.pace));
    // The open loop's rates: as stated, else the closed loop's of 16 single-turn sessions measured above, and half of it.
    const base = figs.find((f) => f.loop.kind === "closed" && f.loop.turnsPerSecond === undefined && f.loop.sessions === 16 && f.loop.turnsPerSession === 1);
    const rates = p.openRates ?? (base === undefined ? [] : [base.turnsPerSecond, base.turnsPerSecond / 2]);
    for (const turnsPerSecond of rates) if (turnsPerSecond > 0) await measure({ kind: "open", turnsPerSecond });
    const optional = [openLoopTable(figs), loopDelayTable(figs), cpuSplitTable(figs), countsTable(figs)].flatMap((t) => (t === undefined ? [] : [t]));
    return {
      name: "turn-cpu",
      title: turnCpuBench.title,
      tables: [turnCpuTable(figs, p.phase), segmentTable(figs), floorsTable(figs), ...(p.via === "sdk" ? [] : [multiplesTable(figs)]), ...optional],
      checks: turnCpuChecks(figs),
      notes: [
        p.via === "sdk"
          ? "through the SDK: every service a process, the gateway included (logging at warn, as the others; its Wake reaches the harness). TTFT is from the SDK's events.send of the user.message (the gateway appends it and sends the Wake before it answers) to the first token preview frame (event_start) on the session's stream, opened with event_deltas beforehand; the platform's share subtracts the offline model's own TTFT (its receipt of the request to its first delta written) per turn. Postgres counts the gateway's database too"
          : "TTFT is from the client's send of EmitEvent(user.message) through the Wake RPC (as the gateway does both) to the first token delta at a client that watched the session beforehand; the platform's share subtracts the offline model's own TTFT (its receipt of the request to its first delta written) per turn. The gateway is not in the run (the bench plays it); --via=sdk puts it in",
        "postgres: the backends of the run's database and the server's shared processes (checkpointer, WAL writer...), alive at the window's end (lib/cpu.ts postgresTicksOf); other databases' backends (other work on the machine) are not counted",
        `closed loop: each of N workers runs sessions of the stated turns back to back${p.pace === undefined ? "" : `, paced: their turns arrive at ${p.pace} a second in all (a Poisson process per worker; a turn that arrives while its session's last one runs is sent when it ends, a new session opens before its first turn's arrival is waited for)`} (${p.via === "sdk" ? "sessions.create and the event stream" : "CreateSession and the watch"} included in the CPU, not in a turn's times); with several turns a session keeps its watch, and the harness is woken again for each turn`,
        `open loop: turns arrive as a Poisson process at the stated rate${p.openRates === undefined ? " (the 16-session closed loop's turns/s in this run, and half of it)" : ""}, each in a new session, however many are in flight (up to 256); its times count from the send, and arrival -> send is printed apart`,
        `floors: after each window, with no turn in flight, on the same services: 100 health Checks and 100 one-row commits interleaved, and 20 SDK calls to the offline model (same scenario, same TTFT) among them${p.via === "sdk" ? "; the multiples table is left out through the SDK (its send holds the gateway's two calls and HTTP, which the floors do not price)" : ""}`,
        `event-loop delay: ${p.metrics ? "the services serve /metrics (MH_METRICS_PORT=0, so their metrics are recorded: a few instruments per turn) and report their loop since the previous scrape, scraped at the window's start and end; the bench process and an idle Node process run the same sampler (packages/telemetry event-loop.ts)" : "not measured (--no-metrics)"}`,
        ...Object.entries(p.nodeFlags).map(([s, flags]) => `${s} ran with node flags ${flags.join(" ")} beside its package's`),
        ...(cpuProfDir === undefined ? [] : [`CPU profiles (the whole run, warm-up included): ${cpuProfDir}`]),
      ],
      data: { figs, phase: p.phase },
    };
  },
};

runIfMain(turnCpuBench, import.meta.url);
