/**
 * The harness, end to end on real services (session log on Postgres, the offline model over SSE
 * through the real SDK, the real sandbox broker on bubblewrap, two harness instances in-process):
 *  1. TTFT, user.message appended -> first token delta at a watching client, with the sandbox
 *     provisioned lazily at the tool call (ours) vs before the first model call (the coupled
 *     baseline, MH_EAGER_SANDBOX), and for a turn with no sandbox tool;
 *  2. harness overhead per turn, the model's own time excluded, for a text turn and a bash turn,
 *     cut into segments at the turn's events, next to what each session-log call costs alone.
 * Why: decoupling brain and hands is meant to take the sandbox off the path to the first token,
 * and the brain's bookkeeping (appends, lease, reads) is paid on every turn.
 */
import { measureOverhead, type OverheadFigures } from "./harness-overhead.js";
import { measurePrimitives } from "./harness-primitives.js";
import { MODEL_TTFT_MS, startRig } from "./harness-rig.js";
import { measureTtft, type TtftFigures } from "./harness-ttft.js";
import {
  atMost,
  cpuTable,
  exactly,
  runIfMain,
  LATENCY_COLUMNS,
  latencyCells,
  ms,
  type Bench,
  type BenchReport,
  type Cell,
  type Check,
  type Table,
} from "./lib/report.js";
import type { Summary } from "./lib/stats.js";

const TTFT_WARMUP = 4;
const TTFT_ROUNDS = 40;
const OVERHEAD_WARMUP = 5;
const OVERHEAD_TURNS = 60;
/** What Anthropic reported from decoupling the brain from the container: TTFT p50 -60%, p95 -90%. */
const ANTHROPIC = { p50: 0.4, p95: 0.1 };

const ratio = (x: number, y: number): string => (Number.isFinite(x / y) ? (x / y).toFixed(2) : "-");
const pair = (s: Summary): string => `${ms(s.p50)} / ${ms(s.p95)}`;

function ttftTables(figs: readonly TtftFigures[]): Table[] {
  const [a, b, c] = figs;
  if (a === undefined || b === undefined || c === undefined) return [];
  const less = (s: Summary, p: "p50" | "p95"): number => s[p] - MODEL_TTFT_MS;
  return [
    {
      title: `TTFT: user.message appended -> first token delta at a watching client (offline model TTFT ${MODEL_TTFT_MS} ms)`,
      columns: ["config", "n", "p50 ms", "p95 ms", "p99 ms", "max ms", "p50 from return", "p95 from return", "excluded"],
      rows: figs.map((f) => [
        f.config.label,
        f.n,
        ms(f.fromCreated.p50),
        ms(f.fromCreated.p95),
        ms(f.fromCreated.p99),
        ms(f.fromCreated.max),
        ms(f.fromReturn.p50),
        ms(f.fromReturn.p95),
        f.excluded.length,
      ]),
    },
    {
      title: "TTFT ratios",
      columns: ["ratio", "p50", "p95", "Anthropic reported"],
      rows: [
        ["(a) ours / (b) coupled", ratio(a.fromCreated.p50, b.fromCreated.p50), ratio(a.fromCreated.p95, b.fromCreated.p95), `${ANTHROPIC.p50} / ${ANTHROPIC.p95}`],
        [
          `(a) / (b), each less the model's ${MODEL_TTFT_MS} ms`,
          ratio(less(a.fromCreated, "p50"), less(b.fromCreated, "p50")),
          ratio(less(a.fromCreated, "p95"), less(b.fromCreated, "p95")),
          "-",
        ],
        ["(a) with bash / (c) without", ratio(a.fromCreated.p50, c.fromCreated.p50), ratio(a.fromCreated.p95, c.fromCreated.p95), "-"],
      ],
    },
    {
      title: "where TTFT goes, p50 / p95 ms (created_at and recorder times: one clock, ms resolution)",
      columns: ["segment", "(a)", "(b)", "(c)"],
      rows: [
        ["EmitEvent(user.message) round trip, client", ...figs.map((f) => pair(f.emit))],
        ["Wake RPC after it, client", ...figs.map((f) => pair(f.wake))],
        ["created_at -> first request at the model", ...figs.map((f) => pair(f.preModel))],
        ["  sandbox provision in the turn (broker duration_ms)", ...figs.map((f) => (f.provision.n === 0 ? "-" : pair(f.provision)))],
        [`request at the model -> first delta handed on (model ${MODEL_TTFT_MS} ms)`, ...figs.map((f) => pair(f.model))],
        ["delta handed on -> received by the watcher", ...figs.map((f) => pair(f.delivery))],
      ],
    },
  ];
}

function overheadTables(figs: readonly OverheadFigures[]): Table[] {
  const perKind = figs.map(
    (f): Table => ({
      title: `turn ${f.kind.label}: n=${f.n}, model unpaced, EmitEvents calls per turn p50 ${f.appends.p50} (distinct created_at)`,
      columns: ["what", ...LATENCY_COLUMNS],
      rows: [
        ["wall: user.message -> status_idle (created_at)", ...latencyCells(f.wall)],
        ["model server time (recorder)", ...latencyCells(f.server)],
        ["overhead = wall - model server time", ...latencyCells(f.overheadServer)],
        ["model call through the SDK, replayed alone", ...latencyCells(f.replay)],
        ["overhead = wall - SDK call (harness only)", ...latencyCells(f.overheadClient)],
      ],
    }),
  );
  const names = [...new Set(figs.flatMap((f) => f.segments.map((s) => s.name)))];
  const cell = (f: OverheadFigures, name: string): Cell => {
    const s = f.segments.find((x) => x.name === name)?.summary;
    return s === undefined ? "-" : pair(s);
  };
  return [
    ...perKind,
    {
      title: "where a turn's time goes, cut at its events, p50 / p95 ms",
      columns: ["segment", ...figs.map((f) => f.kind.label)],
      rows: names.map((name) => [name, ...figs.map((f) => cell(f, name))]),
    },
  ];
}

function checks(ttft: readonly TtftFigures[], overhead: readonly OverheadFigures[]): Check[] {
  const [a, b, c] = ttft;
  if (a === undefined || b === undefined || c === undefined) return [];
  const r50 = a.fromCreated.p50 / b.fromCreated.p50;
  const r95 = a.fromCreated.p95 / b.fromCreated.p95;
  const excluded = [...ttft, ...overhead].reduce((n, f) => n + f.excluded.length, 0);
  return [
    { what: "TTFT p50 (a) ours / (b) coupled, vs Anthropic's -60%", measured: ratio(a.fromCreated.p50, b.fromCreated.p50), target: `<= ${ANTHROPIC.p50}`, pass: r50 <= ANTHROPIC.p50 },
    { what: "TTFT p95 (a) ours / (b) coupled, vs Anthropic's -90%", measured: ratio(a.fromCreated.p95, b.fromCreated.p95), target: `<= ${ANTHROPIC.p95}`, pass: r95 <= ANTHROPIC.p95 },
    atMost("TTFT p50 cost of a sandbox tool in the turn, (a) - (c)", a.fromCreated.p50 - c.fromCreated.p50, 10, "ms"),
    exactly("sessions excluded (wrong instance, wrong sandbox timing)", excluded, 0),
  ];
}

async function runBench(): Promise<BenchReport> {
  const rig = await startRig();
  try {
    const ttft = await measureTtft(rig, TTFT_WARMUP, TTFT_ROUNDS);
    const overhead = await measureOverhead(rig, OVERHEAD_WARMUP, OVERHEAD_TURNS);
    const primitives = await measurePrimitives(rig);
    const excluded = [...ttft.figures, ...overhead.figures].flatMap((f) => f.excluded);
    return {
      name: "harness",
      title: "harness TTFT (lazy vs eager sandbox) and overhead per turn",
      tables: [
        ...ttftTables(ttft.figures),
        ...overheadTables(overhead.figures),
        {
          title: "session-log and broker calls alone, from this process (client round trip)",
          columns: ["call", ...LATENCY_COLUMNS],
          rows: primitives.map((p) => [p.name, ...latencyCells(p.summary)]),
        },
        cpuTable("CPU during each measured phase", [
          ["TTFT", ttft.cpu],
          ["overhead", overhead.cpu],
        ]),
      ],
      checks: checks(ttft.figures, overhead.figures),
      notes: [
        `TTFT: ${TTFT_WARMUP} warm-up rounds then ${TTFT_ROUNDS} rounds of (a), (b), (c) interleaved in rotating order; overhead: ${OVERHEAD_WARMUP} + ${OVERHEAD_TURNS} rounds of (i), (ii)`,
        "TTFT is from the user.message's created_at (set in the log's process just before its INSERT; the client's receipt read with Date.now in the same process, so one clock); 'from return' is from the moment EmitEvent returned to the client (monotonic clock), which also leaves out the commit",
        "every session is woken through the Wake RPC of its instance after the user.message is appended (what the gateway does); the watcher subscribed first (a probe delta came back) and watches with include_deltas",
        "instance attribution: sweepers run once at start then every 10 min (MH_SWEEP_MS=600000), so no instance picks up another's session; Wake must answer STARTED with that instance as lease holder, and the sandbox must be created before (b) / after (a, ii) the first model request, none for (c, i); a session failing this is excluded and counted",
        "(b) provisions a cold bubblewrap sandbox (no warm pool: MH_WARM_POOL_SIZE=0, the broker's default) before the first model call; (a) provisions the same after the first model response. Sandboxes are released after each turn, untimed",
        "the answer after the tool result is unpaced in every scenario (it does not enter TTFT); first answers stream their text at once after the TTFT (tokensPerSecond 0)",
        "model server time: the offline model's recorder (handler entry -> end of stream, ms clock); SDK replay: the turn's recorded request bodies sent again, one by one after the phase, through @metaharness/model-client",
        "harness, log, broker, model server and client share this one Node process (startBrain), as in the integration tests: their CPU competes on the machine's cores",
        `excluded: ${excluded.length === 0 ? "none" : excluded.map((e) => `${e.sessionId} (${e.why})`).join("; ")}`,
      ],
      data: {
        ttft: ttft.figures.map(({ config, ...f }) => ({ config: config.key, ...f })),
        overhead: overhead.figures.map(({ kind, ...f }) => ({ kind: kind.key, ...f })),
        primitives,
        cpu: { ttft: ttft.cpu, overhead: overhead.cpu },
        modelTtftMs: MODEL_TTFT_MS,
      },
    };
  } finally {
    await rig.stop();
  }
}

export const harnessBench: Bench = {
  name: "harness",
  title: "harness: TTFT with a lazy vs an eager sandbox, overhead per turn",
  run: runBench,
};

runIfMain(harnessBench, import.meta.url);
