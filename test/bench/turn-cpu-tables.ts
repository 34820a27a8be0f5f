/**
 * The turn-cpu benchmark's tables and target checks (the TTFT sweep prints the first and checks
 * the same targets): CPU per turn by process, where the platform's share went, the floors measured
 * in the same run and the share's stretches as multiples of them, each process's event-loop delay
 * over the window, and the open loop's arrivals. Every row starts with its load's parameters.
 */
import { atLeast, atMost, ms, type Check, type Table } from "./lib/report.js";
import type { Summary } from "./lib/stats.js";
import { loopLabel, SEGMENT_KEYS } from "./turn-cpu-driver.js";
import { segmentFloors, type Floor } from "./turn-cpu-floors.js";
import type { TurnCpuFigures, TurnSummaries } from "./turn-cpu-measure.js";

/** Issue 31's targets: CPU per text-only turn across the services, the platform's share at 16 sessions. */
const TARGET = { cpuMs: 15, overheadP50: 5, overheadP95: 15, sessions: 16 };
/** The load: 64 sessions carrying 100 turns/s, the share's p99 under 100 ms. */
const PACED_TARGET = { sessions: 64, turnsPerSecond: 100, overheadP99: 100 };

/** Every service's CPU per turn: session log, harness, Postgres, Kafka, and the gateway when it ran (--via=sdk). */
export const servicesMs = (f: TurnCpuFigures): number =>
  f.cpuMsPerTurn.sessionLog + f.cpuMsPerTurn.harness + f.cpuMsPerTurn.postgres + f.cpuMsPerTurn.kafka + (f.via === "sdk" ? f.cpuMsPerTurn.gateway : 0);
/** A load's label with the way its turns went in. */
export const runLabel = (f: Pick<TurnCpuFigures, "loop" | "via">): string => `${loopLabel(f.loop)}${f.via === "sdk" ? ", through the SDK and the gateway" : ""}`;
const pair = (s: Summary): string => `${ms(s.p50)} / ${ms(s.p95)}`;
const trio = (s: Summary): string => `${ms(s.p50)} / ${ms(s.p95)} / ${ms(s.p99)}`;
export const loadCell = (f: TurnCpuFigures): string => `${f.load[0].toFixed(1)}-${f.load[1].toFixed(1)}`;

export function turnCpuTable(figs: readonly TurnCpuFigures[], phase: { modelTtftMs: number; warmupSeconds: number; seconds: number }): Table {
  return {
    title: `CPU per text-only turn by process, ms (session log, harness and, through the SDK, the gateway each their own process; model TTFT ${phase.modelTtftMs} ms, ${phase.seconds} s after ${phase.warmupSeconds} s warm-up)`,
    columns: ["load", "turns", "turns/s", "turn p50 / p95 ms", "TTFT p50 / p95 ms", "platform's share p50 / p95 / p99 ms", "session log", "harness", "gateway", "postgres", "kafka", "bench process (model, clients)", "services total", "machine", "load 1m"],
    rows: figs.map((f) => [
      runLabel(f),
      f.turns,
      f.turnsPerSecond.toFixed(1),
      pair(f.turnMs),
      pair(f.ttftMs),
      trio(f.overheadMs),
      ms(f.cpuMsPerTurn.sessionLog),
      ms(f.cpuMsPerTurn.harness),
      ms(f.cpuMsPerTurn.gateway),
      ms(f.cpuMsPerTurn.postgres),
      ms(f.cpuMsPerTurn.kafka),
      ms(f.cpuMsPerTurn.benchProcess),
      ms(servicesMs(f)),
      ms(f.cpuMsPerTurn.machine),
      loadCell(f),
    ]),
  };
}

/** Each load's turns, and for sessions of several turns its first turns and its later ones apart. */
function turnGroups(f: TurnCpuFigures): Array<[string, TurnSummaries]> {
  const label = runLabel(f);
  if (f.byTurn === undefined) return [[label, f]];
  const n = f.loop.kind === "closed" ? f.loop.turnsPerSession : 1;
  return [[`${label}: every turn`, f], [`${label}: turn 1`, f.byTurn.first], [`${label}: turns 2..${n}`, f.byTurn.later]];
}

/** Where the share went, per load; sessions of several turns add a row for turn 1 and one for turns 2..n. */
export function segmentTable(figs: readonly TurnCpuFigures[]): Table {
  return {
    title: "Where the platform's share went, p50 / p95 / p99 ms per turn (the bench process's clock, sub-ms)",
    columns: [
      "load, turns",
      "n",
      "TTFT p50 / p95",
      "share",
      "EmitEvent(user.message) round trip (SDK: events.send, the gateway's append and Wake)",
      "Wake round trip (lease, short log read; SDK: in the send)",
      "Wake returned -> request at the model (SDK: events.send sent -> request at the model)",
      "model's first delta -> at the watcher (SDK: the first preview frame)",
    ],
    rows: figs.flatMap((f) => turnGroups(f).map(([label, s]) => [label, s.ttftMs.n, pair(s.ttftMs), trio(s.overheadMs), ...SEGMENT_KEYS.map((k) => trio(s.segments[k]))])),
  };
}

export function floorsTable(figs: readonly TurnCpuFigures[]): Table {
  return {
    title: "Floors, measured after each window on the same services (idle then), p50 / p95 / p99 ms",
    columns: ["load (of the window before)", "gRPC round trip to the log (health Check)", "Postgres commit of one row", "SDK TTFT from the offline model", "  of which the model's own", "  the request's way there (call -> model)", "  the first delta's way back (model -> SDK event)", "load 1m"],
    rows: figs.map((f) => [runLabel(f), trio(f.floors.grpc), trio(f.floors.commit), trio(f.floors.sdkTtft), pair(f.floors.modelOwn), trio(f.floors.sdkSend), trio(f.floors.sdkReceive), loadCell(f)]),
  };
}

const times = (x: number, floor: number): string => (floor > 0 && Number.isFinite(x / floor) ? `${(x / floor).toFixed(1)}x` : "-");
const against = (s: Summary, floor: Floor): string => `${ms(s.p50)} (${times(s.p50, floor.p50)}) / ${ms(s.p95)} (${times(s.p95, floor.p95)})`;

/** The share's stretches as multiples of the floors they would cost if they were only their hops. */
export function multiplesTable(all: readonly TurnCpuFigures[]): Table {
  // Through the SDK the send holds the gateway's two calls and HTTP, which the floors do not price.
  const figs = all.filter((f) => f.via === "grpc");
  const floorOf = (f: TurnCpuFigures) => segmentFloors(f.floors);
  const first = figs[0] === undefined ? undefined : floorOf(figs[0]);
  const what = (k: "emit" | "wakeToModel" | "fromModel" | "share"): string => (first === undefined ? "" : ` [floor: ${first[k].what}]`);
  return {
    title: "The share's stretches against their floors: p50 (x floor p50) / p95 (x floor p95), ms; the floor is the sum of its hops' floors measured after the same window",
    columns: ["load, turns", `EmitEvent(user.message)${what("emit")}`, `Wake sent -> request at the model${what("wakeToModel")}`, `model's first delta -> at the watcher${what("fromModel")}`, `platform's share${what("share")}`, "floors p50 ms: emit / wake..model / delta / share"],
    rows: figs.flatMap((f) => {
      const fl = floorOf(f);
      return turnGroups(f).map(([label, s]) => [
        label,
        against(s.segments.emit, fl.emit),
        against(s.wakeToModelMs, fl.wakeToModel),
        against(s.segments.fromModel, fl.fromModel),
        against(s.overheadMs, fl.share),
        [fl.emit, fl.wakeToModel, fl.fromModel, fl.share].map((x) => ms(x.p50)).join(" / "),
      ]);
    }),
  };
}

export function loopDelayTable(figs: readonly TurnCpuFigures[]): Table | undefined {
  const measured = figs.filter((f) => f.loopDelay !== undefined);
  if (measured.length === 0) return undefined;
  const cell = (d: { p50: number; p99: number; max: number; utilization: number }): string => `${ms(d.p50)} / ${ms(d.p99)} / ${ms(d.max)} (${Math.round(d.utilization * 100)}%)`;
  return {
    title: "Event-loop delay over the window, p50 / p99 / max ms (loop busy %): how late a ready callback ran in each process; the idle process's is the wait for a core alone",
    columns: ["load", "session log", "harness", "gateway", "bench process (model, clients)", "an idle Node process (the machine's floor)", "load 1m"],
    rows: measured.map((f) => {
      const d = f.loopDelay!;
      const of = (k: keyof typeof d): string => (d[k] === undefined ? "-" : cell(d[k]));
      return [runLabel(f), of("sessionLog"), of("harness"), of("gateway"), of("benchProcess"), of("idleProcess"), loadCell(f)];
    }),
  };
}

/** What the session log and the harness sent and allocated per turn, each phase's column side by side (--counts). */
export function countsTable(figs: readonly TurnCpuFigures[]): Table | undefined {
  const counted = figs.filter((f) => f.countsPerTurn !== undefined);
  if (counted.length === 0) return undefined;
  const sum = (c: Record<string, number>, prefix: string): number => Object.entries(c).reduce((n, [k, v]) => n + (k.startsWith(prefix) ? v : 0), 0);
  const withTotals = (c: Record<string, number>): Record<string, number> => ({ ...c, "grpc calls in all": sum(c, "grpc "), "sql statements in all": sum(c, "sql ") });
  const columns = counted.flatMap((f) => [
    [`session log, ${loopLabel(f.loop)}`, withTotals(f.countsPerTurn!.sessionLog)] as const,
    [`harness, ${loopLabel(f.loop)}`, withTotals(f.countsPerTurn!.harness)] as const,
    ...(f.countsPerTurn!.gateway === undefined ? [] : [[`gateway, ${loopLabel(f.loop)}`, withTotals(f.countsPerTurn!.gateway)] as const]),
  ]);
  const keys = [...new Set(columns.flatMap(([, c]) => Object.keys(c)))].sort();
  return {
    title: "Counted per turn over the window in each process (lib/call-counter.ts): gRPC calls it made, Postgres statements it sent (by their first words), socket writes, promises and other async resources made, JS heap allocated and garbage collections",
    columns: ["what", ...columns.map(([label]) => label)],
    rows: keys.map((k) => [k, ...columns.map(([, c]) => (c[k] === undefined ? "-" : c[k].toFixed(2)))]),
  };
}

export function openLoopTable(figs: readonly TurnCpuFigures[]): Table | undefined {
  const open = figs.filter((f) => f.arrivals !== undefined);
  if (open.length === 0) return undefined;
  return {
    title:
      "Open and paced loops: Poisson arrivals at a stated rate (open: each turn in a new session, arrival -> send holding CreateSession and the watch opened; paced: each session's turns, arrival -> send holding the wait for its turn before and a new session's opening), and this process's lateness",
    columns: ["load", "arrivals in the window", "refused (too many in flight)", "turns ended in the window", "arrival -> send p50 / p95 / p99 ms", "load 1m"],
    rows: open.map((f) => [runLabel(f), f.arrivals!.count, f.arrivals!.refused, f.turns, trio(f.arrivals!.lateMs), loadCell(f)]),
  };
}

export function turnCpuChecks(figs: readonly TurnCpuFigures[]): Check[] {
  const paced = figs
    .filter((f) => f.loop.kind === "closed" && f.loop.sessions === PACED_TARGET.sessions && f.loop.turnsPerSecond === PACED_TARGET.turnsPerSecond)
    .flatMap((f) => {
      const where = `${PACED_TARGET.sessions} sessions paced at ${PACED_TARGET.turnsPerSecond} turns/s${f.via === "sdk" ? ", through the SDK" : ""}`;
      return [
        atLeast(`turns/s carried, ${where} (Poisson arrivals: about ±2% in 30 s)`, f.turnsPerSecond, PACED_TARGET.turnsPerSecond * 0.95, "turns/s"),
        atMost(`CPU per text-only turn, all services in the run, ${where}`, servicesMs(f), TARGET.cpuMs, "ms"),
        atMost(`platform's share p99, ${where} (n=${f.overheadMs.n})`, f.overheadMs.p99, PACED_TARGET.overheadP99, "ms"),
      ];
    });
  return figs
    .filter((f) => f.loop.kind === "closed" && f.loop.sessions === TARGET.sessions && f.loop.turnsPerSession === 1)
    .flatMap((f) => [
      atMost(`CPU per text-only turn, session log + harness + postgres + kafka${f.via === "sdk" ? " + gateway, through the SDK" : ""}, ${TARGET.sessions} sessions`, servicesMs(f), TARGET.cpuMs, "ms"),
      atMost(`platform's share p50, text-only turns, services as processes${f.via === "sdk" ? ", through the SDK" : ""}, ${TARGET.sessions} sessions (n=${f.overheadMs.n})`, f.overheadMs.p50, TARGET.overheadP50, "ms"),
      atMost(`platform's share p95, text-only turns, services as processes${f.via === "sdk" ? ", through the SDK" : ""}, ${TARGET.sessions} sessions (n=${f.overheadMs.n})`, f.overheadMs.p95, TARGET.overheadP95, "ms"),
    ])
    .concat(paced);
}

/**
 * With --cpu-prof: each service's CPU per turn split by where it went in the window (the profile's
 * busy samples by category, lib/cpu-profile-split.ts, scaled to the process's CPU per turn).
 */
export function cpuSplitTable(figs: readonly TurnCpuFigures[]): Table | undefined {
  const split = figs.filter((f) => f.cpuSplit !== undefined);
  if (split.length === 0) return undefined;
  const names = { sessionLog: "session log", harness: "harness", gateway: "gateway" } as const;
  const columns = split.flatMap((f) =>
    (["sessionLog", "harness", "gateway"] as const).flatMap((p) => {
      const of = f.cpuSplit![p];
      return of === undefined ? [] : [{ f, p, of, label: `${runLabel(f)}: ${names[p]} (${of.busySamples} samples)` }];
    }),
  );
  const categories = [...new Set(columns.flatMap(({ of }) => [...of.shares.keys()]))];
  const cell = (f: TurnCpuFigures, p: "sessionLog" | "harness" | "gateway", of: { shares: ReadonlyMap<string, number> }, category: string): string => {
    const share = of.shares.get(category) ?? 0;
    return `${ms(share * f.cpuMsPerTurn[p])} (${Math.round(share * 100)}%)`;
  };
  return {
    title:
      "Where each service's CPU per turn went, ms (% of its busy samples in the window): a sample counts for the nearest frame from the leaf up that names a library or part; the main thread's split, scaled to the process's CPU from /proc",
    columns: ["category", ...columns.map((c) => c.label)],
    rows: [
      ...categories.map((category) => [category, ...columns.map(({ f, p, of }) => cell(f, p, of, category))]),
      ["in all", ...columns.map(({ f, p }) => ms(f.cpuMsPerTurn[p]))],
    ],
  };
}
