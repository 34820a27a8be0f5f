/**
 * The headline, measured on real parts: time to first token of the decoupled design (ours, the
 * default: the sandbox waits for a tool call) against the coupled configuration of the same
 * services (MH_EAGER_SANDBOX: the session's sandbox provisioned, its repository cloned through the
 * credential proxy, its tool process started, before the first model call), swept over the model's
 * own TTFT, the repository's size and the number of concurrent sessions, with a mix of sessions
 * that never touch a sandbox and sessions that call bash in their first turn. Every figure is
 * printed beside its parameters and the load average; p50/p95/p99 for both modes and their ratio
 * per point; the platform's share (TTFT less the model's own, per session, same run) with where it
 * goes; CPU per turn, and per process for text-only turns with the session log and the harness
 * each in its own process (turn-cpu.ts); JSON in bench/results/ and a chart
 * (bench/results/ttft-sweep.svg, copied to docs/ttft-sweep.svg with the run docs/performance.md quotes).
 *
 * `npm run bench -- ttft` runs the default sweep in about 10 minutes (TTFT 100/500/2000 ms x
 * empty/10 MB repository x 1/16 sessions, the 10 MB one at 1 session only; and at 500 ms with the
 * empty one: 64 sessions, 16 sessions with their package layer cached and not);
 * `npm run bench -- ttft --full` the whole one (TTFT 100 ms..2 s in 5 steps, empty/10 MB/200 MB
 * repositories, 1/16/64 sessions, package layers at 1 and 16); `-- ttft --quick` checks that every
 * part runs (1 and 4 sessions, both layers, no CPU phase).
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import { REPOS, type RepoSpec } from "./lib/bench-repos.js";
import { atMost, exactly, ms, runIfMain, type Bench, type BenchReport, type Cell, type Check, type Table } from "./lib/report.js";
import { summarize, type Summary } from "./lib/stats.js";
import { svgChart, type ChartPanel } from "./lib/svg-chart.js";
import { measurePoint, type ModeFigures, type PointFigures, type Sample, type Segments, type SweepPoint } from "./ttft-sweep-points.js";
import { CACHED_SET, startSweepRig, type LayerKind } from "./ttft-sweep-rig.js";
import { closedLoop, CPU_PHASE, floorsTable, loopDelayTable, measureTurnCpu, multiplesTable, turnCpuChecks, turnCpuTable, type TurnCpuFigures } from "./turn-cpu.js";

interface Sweep {
  readonly name: string;
  /** The grid: every model TTFT x repository x concurrency, sessions without packages. */
  readonly ttfts: readonly number[];
  readonly repos: readonly RepoSpec[];
  readonly concurrency: readonly number[];
  /** Points beyond the grid: more sessions, package layers. */
  readonly extra: readonly SweepPoint[];
  /** Rounds per mode and point, and turns per worker per round. */
  readonly rounds: (p: SweepPoint) => { rounds: number; turnsPerWorker: number };
  /** Points left out, and why. */
  readonly skip: (p: SweepPoint) => string | undefined;
  /** Concurrencies of the per-service CPU phase (text-only turns, turn-cpu.ts). */
  readonly cpuConcurrency: readonly number[];
}


const repo = (name: string): RepoSpec => REPOS.find((r) => r.name === name)!;
const point = (ttftMs: number, repoName: string, concurrency: number, layer: LayerKind = "none"): SweepPoint => ({ ttftMs, repo: repo(repoName), concurrency, layer });

/**
 * Rounds per point: fewer as sessions grow (each round has that many). A layer not cached is built
 * anew in each round and mode, and each session takes one turn, so that every one of them finds
 * the layer as the round's first session left it.
 */
const roundsOf = (full: boolean) => (p: SweepPoint): { rounds: number; turnsPerWorker: number } => {
  if (p.layer === "uncached") return { rounds: full ? 2 : 1, turnsPerWorker: 1 };
  if (p.concurrency === 1) return { rounds: full ? 6 : 2, turnsPerWorker: 2 };
  if (p.concurrency === 16) return { rounds: full ? 4 : 2, turnsPerWorker: 1 };
  return { rounds: full ? 2 : 1, turnsPerWorker: 1 };
};

const DEFAULT_SWEEP: Sweep = {
  name: "default",
  ttfts: [100, 500, 2000],
  repos: [repo("empty"), repo("10mb")],
  concurrency: [1, 16],
  // 64 sessions at one point, and the package layer's two states at 16 sessions.
  extra: [point(500, "empty", 64), point(500, "empty", 16, "cached"), point(500, "empty", 16, "uncached")],
  rounds: roundsOf(false),
  // 16 coupled sessions cloning 10 MiB each took 50 s to a first token and 4 minutes a point (05:20, load 14-23).
  skip: (p) => (p.concurrency === 16 && p.repo.name === "10mb" ? "--full only (16 clones of 10 MiB at once: about 4 minutes a point)" : undefined),
  cpuConcurrency: [16],
};

const FULL_SWEEP: Sweep = {
  name: "full",
  ttfts: [100, 200, 500, 1000, 2000],
  repos: REPOS,
  concurrency: [1, 16, 64],
  extra: [1, 16].flatMap((c) => (["cached", "uncached"] as const).map((layer) => point(500, "empty", c, layer))),
  rounds: roundsOf(true),
  // 64 sandboxes each holding a 200 MiB clone in its tmpfs workspace (memory) is 14 GiB of a shared 23 GiB machine.
  skip: (p) => (p.concurrency === 64 && p.repo.name === "200mb" ? "64 clones of 200 MiB in tmpfs (about 14 GiB of memory)" : undefined),
  cpuConcurrency: [1, 16, 64],
};

/** A check that every part runs (`-- ttft --quick`): one model TTFT, 1 and 4 sessions, both package layers, no CPU phase. */
const QUICK_SWEEP: Sweep = {
  name: "quick",
  ttfts: [200],
  repos: [repo("empty")],
  concurrency: [1, 4],
  extra: [point(200, "empty", 4, "cached"), point(200, "empty", 4, "uncached")],
  rounds: () => ({ rounds: 1, turnsPerWorker: 1 }),
  skip: () => undefined,
  cpuConcurrency: [],
};

/** The platform's share targets, at 16 concurrent sessions (issue 31). */
const OVERHEAD_TARGET = { p50: 5, p95: 15, concurrency: 16 };
/** A turn (its clone included) that takes longer is excluded and counted. */
const TURN_TIMEOUT_MS = 180_000;

const ratio = (a: number, b: number): string => (Number.isFinite(a / b) ? (a / b).toFixed(2) : "-");
const trio = (s: Summary): string => `${ms(s.p50)} / ${ms(s.p95)} / ${ms(s.p99)}`;
const pair = (s: Summary): string => `${ms(s.p50)} / ${ms(s.p95)}`;
const mode = (f: PointFigures, m: string): ModeFigures => f.modes.find((x) => x.mode === m)!;
const loadCell = (f: PointFigures): string => `${f.load[0].toFixed(1)}-${f.load[1].toFixed(1)}`;
const LAYER_CELL: Record<LayerKind, string> = { none: "-", cached: "cached", uncached: "built by the first session" };

/** The parameters of a row: model TTFT, repository, package layer, sessions, mode. */
const pointCells = (f: PointFigures, m: ModeFigures): Cell[] => [f.point.ttftMs, f.point.repo.name, LAYER_CELL[f.point.layer], f.point.concurrency, m.mode];

function sweepTable(figs: readonly PointFigures[]): Table {
  return {
    title: "TTFT: user.message sent -> first token at a watching client, ms (half the sessions text only, half bash in their first turn)",
    columns: ["model TTFT", "repository", "packages", "sessions", "mode", "n", "p50", "p95", "p99", "max", "decoupled/coupled p50 / p95 / p99", "load 1m"],
    rows: figs.flatMap((f) =>
      f.modes.map((m) => [
        ...pointCells(f, m),
        m.ttft.n,
        ms(m.ttft.p50),
        ms(m.ttft.p95),
        ms(m.ttft.p99),
        ms(m.ttft.max),
        m.mode === "decoupled"
          ? ["p50", "p95", "p99"].map((p) => ratio(m.ttft[p as "p50"], mode(f, "coupled").ttft[p as "p50"])).join(" / ")
          : "",
        loadCell(f),
      ]),
    ),
  };
}

function overheadTable(figs: readonly PointFigures[]): Table {
  return {
    title: "the platform's share: TTFT less the model's own TTFT (its receipt of the request -> its first delta written), per session, decoupled, ms",
    columns: ["model TTFT", "repository", "packages", "sessions", "n", "all p50 / p95 / p99", "text-only p50 / p95 / p99", "model's own p50 / p95", "load 1m"],
    rows: figs.map((f) => {
      const d = mode(f, "decoupled");
      const text = summarize(d.samples.filter((s) => s.kind === "text").map((s) => s.overhead));
      return [f.point.ttftMs, f.point.repo.name, LAYER_CELL[f.point.layer], f.point.concurrency, d.overhead.n, trio(d.overhead), trio(text), pair(summarize(d.samples.map((s) => s.segments.model))), loadCell(f)];
    }),
  };
}

const SEGMENTS: ReadonlyArray<readonly [keyof Segments, string]> = [
  ["append", "EmitEvent(user.message) round trip, client"],
  ["wake", "Wake RPC round trip, client (the lease)"],
  ["toModel", "Wake returned -> request at the model (session read, bookkeeping, context, SDK, HTTP; coupled: the sandbox)"],
  ["model", "the model's own TTFT (request received -> first delta written)"],
  ["handOn", "first delta written -> handed on by the harness (HTTP, SDK, forwarder)"],
  ["delivery", "handed on -> received by the watcher (the log's fan-out)"],
];

function segmentsTable(figs: readonly PointFigures[], concurrency: number): Table {
  const at = figs.filter((f) => f.point.concurrency === concurrency && f.point.layer === "none");
  const of = (m: string, pred: (s: Sample) => boolean): Sample[] => at.flatMap((f) => mode(f, m).samples.filter(pred));
  const groups: Array<[string, Sample[]]> = [
    ["decoupled, text only", of("decoupled", (s) => s.kind === "text")],
    ["decoupled, bash", of("decoupled", (s) => s.kind === "bash")],
    ["coupled, all", of("coupled", () => true)],
  ];
  const loads = at.flatMap((f) => f.load);
  return {
    title: `where TTFT goes at ${concurrency} concurrent sessions, every point without packages pooled, p50 / p95 ms (load 1m ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)})`,
    columns: ["segment", ...groups.map(([g, s]) => `${g} (n=${s.length})`)],
    rows: [
      ...SEGMENTS.map(([key, label]) => [label, ...groups.map(([, s]) => pair(summarize(s.map((x) => x.segments[key]))))]),
      ["  of which sandbox provision before the model (broker duration_ms)", ...groups.map(([, s]) => (s.some((x) => x.provisionMs !== undefined) ? pair(summarize(s.flatMap((x) => x.provisionMs ?? []))) : "-"))],
      ["TTFT", ...groups.map(([, s]) => pair(summarize(s.map((x) => x.ttft))))],
      ["platform's share (TTFT - model's own)", ...groups.map(([, s]) => pair(summarize(s.map((x) => x.overhead))))],
    ],
  };
}

function cpuTable(figs: readonly PointFigures[]): Table {
  const perTurn = (m: ModeFigures, pct: number): string => ms((pct / 100) * (m.wallMs / Math.max(1, m.turns)));
  return {
    title: "CPU per turn (ms of CPU over the rounds' wall time / turns; services in the bench process) and turns/s",
    columns: ["model TTFT", "repository", "packages", "sessions", "mode", "turns", "turns/s", "machine", "bench process (log, harnesses, broker, proxy, model)", "postgres", "kafka", "other", "load 1m"],
    rows: figs.flatMap((f) =>
      f.modes.map((m) => [
        ...pointCells(f, m),
        m.turns,
        (m.turns / (m.wallMs / 1000)).toFixed(1),
        perTurn(m, m.cpu.machine),
        perTurn(m, m.cpu.self),
        perTurn(m, m.cpu.postgres),
        perTurn(m, m.cpu.kafka),
        perTurn(m, m.cpu.other),
        loadCell(f),
      ]),
    ),
  };
}

function chart(sweep: Sweep, figs: readonly PointFigures[], started: Date): string {
  const panels: ChartPanel[] = [];
  // A panel per repository, concurrency and package layer, its points along the model's TTFT.
  const keys = [...new Set(figs.map((f) => `${f.point.repo.name}|${f.point.concurrency}|${f.point.layer}`))];
  for (const key of keys) {
    const at = figs.filter((f) => `${f.point.repo.name}|${f.point.concurrency}|${f.point.layer}` === key);
    const { repo: r, concurrency: c, layer } = at[0]!.point;
    panels.push({
      title: `repository ${r.name}, ${c} session${c === 1 ? "" : "s"}${layer === "none" ? "" : `, packages ${LAYER_CELL[layer]}`}`,
      series: (["coupled", "decoupled"] as const).map((m) => ({
        label: m === "coupled" ? "coupled (MH_EAGER_SANDBOX)" : "decoupled (default)",
        color: m === "coupled" ? "#d62728" : "#1f77b4",
        points: at.map((f) => ({ x: f.point.ttftMs, ...mode(f, m).ttft })),
      })),
      reference: at.map((f) => ({ x: f.point.ttftMs, y: f.point.ttftMs })),
    });
  }
  const loads = figs.flatMap((f) => f.load);
  return svgChart({
    title: "Time to first token: decoupled (ours) vs coupled, same services",
    notes: [
      `npm run bench -- ttft${sweep.name === "default" ? "" : ` --${sweep.name}`} at ${started.toISOString().slice(0, 16)}Z; ${os.availableParallelism()} cores (${os.cpus()[0]?.model.trim() ?? "?"}), load 1m ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`,
      "half the sessions text only, half bash in their first turn; TTFT = user.message sent -> first token at a watching client",
    ],
    xLabel: "x: the offline model's own TTFT, ms",
    yLabel: "TTFT, ms",
    referenceLabel: "the model's own TTFT",
    panels,
  });
}

function checks(figs: readonly PointFigures[]): Check[] {
  const at16 = figs.filter((f) => f.point.concurrency === OVERHEAD_TARGET.concurrency && f.point.layer === "none").flatMap((f) => mode(f, "decoupled").samples);
  const share = summarize(at16.map((s) => s.overhead));
  const excluded = figs.reduce((n, f) => n + f.modes.reduce((k, m) => k + m.excluded.length, 0), 0);
  return [
    atMost(`platform's share p50, decoupled, ${OVERHEAD_TARGET.concurrency} sessions, every point without packages pooled (n=${share.n})`, share.p50, OVERHEAD_TARGET.p50, "ms"),
    atMost(`platform's share p95, decoupled, ${OVERHEAD_TARGET.concurrency} sessions, every point without packages pooled (n=${share.n})`, share.p95, OVERHEAD_TARGET.p95, "ms"),
    exactly("sessions excluded (wrong instance or sandbox timing, no clone, no delta)", excluded, 0),
  ];
}

export async function runSweep(which: "default" | "full" | "quick"): Promise<BenchReport> {
  const sweep = which === "full" ? FULL_SWEEP : which === "quick" ? QUICK_SWEEP : DEFAULT_SWEEP;
  const started = new Date();
  const grid = sweep.repos.flatMap((r) => sweep.concurrency.flatMap((c) => sweep.ttfts.map((t) => point(t, r.name, c))));
  const points = [...grid, ...sweep.extra];
  const rig = await startSweepRig({ ttfts: sweep.ttfts, repos: sweep.repos, layers: points.some((p) => p.layer !== "none") });
  const figs: PointFigures[] = [];
  const skipped: string[] = [];
  try {
    for (const p of points) {
      const why = sweep.skip(p);
      if (why !== undefined) {
        skipped.push(`${p.repo.name} x ${p.concurrency} sessions x ${p.ttftMs} ms: ${why}`);
        continue;
      }
      const { rounds, turnsPerWorker } = sweep.rounds(p);
      const f = await measurePoint(rig, p, rounds, turnsPerWorker, TURN_TIMEOUT_MS);
      figs.push(f);
      const [d, c] = [mode(f, "decoupled"), mode(f, "coupled")];
      console.log(`  ttft ${p.ttftMs} ms, ${p.repo.name}, packages ${LAYER_CELL[p.layer]}, ${p.concurrency} sessions: decoupled p50 ${ms(d.ttft.p50)} coupled ${ms(c.ttft.p50)} ms (load ${loadCell(f)})`);
    }
  } finally {
    await rig.stop();
  }
  const turnCpu: TurnCpuFigures[] = [];
  for (const concurrency of sweep.cpuConcurrency) turnCpu.push(await measureTurnCpu({ loop: closedLoop(concurrency), ...CPU_PHASE }));
  const svg = chart(sweep, figs, started);
  const file = new URL("./results/ttft-sweep.svg", import.meta.url);
  await writeFile(file, svg);
  const excluded = figs.flatMap((f) => f.modes.flatMap((m) => m.excluded.map((e) => `${e.sessionId} (${m.mode}, ${f.point.ttftMs} ms, ${f.point.repo.name}, ${f.point.concurrency}): ${e.why}`)));
  const concurrencies = [...new Set(figs.map((f) => f.point.concurrency))];
  return {
    name: "ttft",
    title: `TTFT sweep (${sweep.name}): decoupled vs coupled on the same services`,
    tables: [sweepTable(figs), overheadTable(figs), ...concurrencies.map((c) => segmentsTable(figs, c)), cpuTable(figs), ...(turnCpu.length === 0 ? [] : [turnCpuTable(turnCpu, CPU_PHASE), floorsTable(turnCpu), multiplesTable(turnCpu), ...[loopDelayTable(turnCpu)].flatMap((t) => (t === undefined ? [] : [t]))])],
    checks: [...checks(figs), ...turnCpuChecks(turnCpu)],
    notes: [
      `sweep ${sweep.name}: model TTFT ${sweep.ttfts.join(", ")} ms x repositories ${sweep.repos.map((r) => r.name).join(", ")} x ${sweep.concurrency.join(", ")} concurrent sessions, no packages; and ${sweep.extra.map((p) => `${p.ttftMs} ms, ${p.repo.name}, ${p.concurrency} sessions, packages ${LAYER_CELL[p.layer]}`).join("; ")}; rounds per mode and point: ${points.map((p) => `${p.concurrency} sessions${p.layer === "none" ? "" : ` (packages ${LAYER_CELL[p.layer]})`}: ${sweep.rounds(p).rounds} x ${sweep.rounds(p).turnsPerWorker} turn(s) per worker`).filter((x, i, all) => all.indexOf(x) === i).join("; ")}, coupled and decoupled rounds alternating`,
      `packages (the environment's package layer, built by the broker from PyPI and npm into a layer directory of this run): cached = ${JSON.stringify({ pip: CACHED_SET.pip, npm: CACHED_SET.npm })}, built before the rounds; built by the first session = the same with another version of six in each round and mode (six==1.16.0, 1.15.0, ...), a set no session asked for before, so the round's first session to provision builds it (coupled: before its first model call; decoupled: at its bash call, after its first token) and the others wait for that build`,
      `repositories (generated once into ${"MH_CACHE"}/bench-repos, served by the test git server that refuses requests without the token; cloned in the sandbox through the broker's git relay and the credential proxy): ${sweep.repos.map((r) => `${r.name}: ${r.about}`).join("; ")}`,
      "coupled: the harness instance with MH_EAGER_SANDBOX=true provisions the session's sandbox (its package layer mounted, built first if it must be; repository cloned; the sandbox's tool process started) before its first model call, for every session, text-only ones included, as a container per session does; decoupled: the default instance, whose bash sessions provision at the tool call, after the first token",
      "TTFT is from the client's send of EmitEvent(user.message) (as a gateway appends it) through the Wake RPC (as the gateway wakes a harness) to the first token delta at a client that watched the session beforehand (include_deltas), monotonic clock of this process; the segments use Date.now of the same process (every service here runs in it), ms resolution",
      "the model's own TTFT is the offline model's: its receipt of the request to its first content delta written (recorder firstDeltaAt); the platform's share subtracts it per session",
      "every service (session log, both harnesses, broker, credential proxy, offline model, git server's Node side) runs in this one Node process, the git http-backend and sandboxes as child processes: their CPU competes on the machine's cores with other work on it (load average beside every figure)",
      `skipped: ${skipped.length === 0 ? "none" : skipped.join("; ")}`,
      `excluded: ${excluded.length === 0 ? "none" : excluded.join("; ")}`,
      `chart: ${file.pathname}`,
    ],
    data: {
      sweep: { name: sweep.name, ttfts: sweep.ttfts, repos: sweep.repos, concurrency: sweep.concurrency, extra: sweep.extra.map((p) => ({ ...p, repo: p.repo.name })) },
      skipped,
      turnCpu,
      points: figs.map((f) => ({
        ttftMs: f.point.ttftMs,
        repo: f.point.repo.name,
        concurrency: f.point.concurrency,
        layer: f.point.layer,
        load: f.load,
        modes: f.modes.map((m) => ({ mode: m.mode, ttft: m.ttft, overhead: m.overhead, wallMs: m.wallMs, turns: m.turns, cpu: m.cpu, excluded: m.excluded, samples: m.samples })),
      })),
    },
  };
}

export const ttftBench: Bench = {
  name: "ttft",
  title: "TTFT sweep: decoupled vs coupled (MH_EAGER_SANDBOX), model TTFT x repository x sessions",
  run: () => runSweep(process.argv.includes("--full") ? "full" : process.argv.includes("--quick") ? "quick" : "default"),
};

runIfMain(ttftBench, import.meta.url);
