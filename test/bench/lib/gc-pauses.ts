/**
 * The garbage-collection pauses of a benchmark's two Node processes: this one (the client), from
 * perf_hooks "gc" entries, which say when each pause began; and the service's, from the lines its
 * --trace-gc flag prints, which give durations only (its clock is not ours). Why: here a
 * scavenge of either process stops it for several milliseconds, the client's about once per 50
 * GetEvents calls, so a tail latency is often a pause rather than the code under test: node:http2
 * and grpc-js keep a finished call's objects reachable until a later collection, so each
 * scavenge copies 15-30% of what was allocated since the one before (docs/performance.md, "Garbage collection").
 */
import { PerformanceObserver, constants, type PerformanceEntry } from "node:perf_hooks";
import { percentile } from "./stats.js";

export interface Pause {
  /** When it began, on performance.now()'s clock (NaN for the service's). */
  readonly startMs: number;
  readonly ms: number;
  /** A young-generation collection rather than a full one or one of its incremental steps. */
  readonly minor: boolean;
  /**
   * Incremental marking steps taken before this full collection, in ms, as --trace-gc sums them
   * ("+ 15.4 ms in 42 steps"): the main thread stood still for those too. 0 in this process's own
   * pauses, where each step is a pause of its own.
   */
  readonly stepsMs: number;
}

/** The flag that makes the service print one line per collection (lib/service.ts nodeArgs). */
export const TRACE_GC = "--trace-gc";

/** Records this process's pauses until stop(). */
export function recordOwnPauses(): { stop(): Pause[] } {
  const pauses: Pause[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) pauses.push(ownPause(entry));
  });
  observer.observe({ entryTypes: ["gc"] });
  return {
    stop() {
      for (const entry of observer.takeRecords()) pauses.push(ownPause(entry));
      observer.disconnect();
      return pauses;
    },
  };
}

function ownPause(entry: PerformanceEntry): Pause {
  // Node 20's types do not declare `detail` on PerformanceEntry; gc entries carry { kind, flags }.
  const kind = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
  return { startMs: entry.startTime, ms: entry.duration, minor: kind === constants.NODE_PERFORMANCE_GC_MINOR, stepsMs: 0 };
}

// Node 20: "[pid:0x...]   2345 ms: Scavenge 4.1 (5.3) -> 3.6 (6.3) MB, 1.05 / 0.00 ms  (average mu ..."
// and "... Mark-Compact 54.4 (86.5) -> 27.0 (79.3) MB, 7.43 / 0.02 ms  (+ 15.4 ms in 42 steps ...";
// newer V8 adds "(interleaved)" after the name and "pooled: 19 MB, " before the pause.
const TRACE_LINE =
  /\d+ ms: (Scavenge|Minor Mark-Compact|Minor Mark-Sweep|Mark-Compact|Mark-Sweep)\b[^,\n]*MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ [\d.]+ ms(?: +\(\+ ([\d.]+) ms in \d+ steps)?/g;

/** The pauses in `output` written by a process started with TRACE_GC. */
export function tracedPauses(output: string): Pause[] {
  return [...output.matchAll(TRACE_LINE)].map((m) => ({
    startMs: Number.NaN,
    ms: Number(m[2]),
    minor: m[1] === "Scavenge" || m[1]?.startsWith("Minor ") === true,
    stepsMs: Number(m[3] ?? 0),
  }));
}

/** Whether a call that began at startMs and took ms overlapped one of `pauses` (own clock). */
export function overlapsPause(startMs: number, ms: number, pauses: readonly Pause[]): boolean {
  return pauses.some((p) => p.startMs < startMs + ms && p.startMs + p.ms > startMs);
}

export interface PauseSummary {
  readonly count: number;
  readonly scavenges: number;
  readonly p50: number;
  readonly p90: number;
  readonly max: number;
  /** Incremental marking steps outside the pauses (the service's; the client's are pauses), ms in all. */
  readonly stepsMs: number;
  /** Percent of the window the process stood still, steps included. */
  readonly pausedPercent: number;
}

export function summarizePauses(pauses: readonly Pause[], windowMs: number): PauseSummary {
  const durations = pauses.map((p) => p.ms).sort((a, b) => a - b);
  const stepsMs = pauses.reduce((sum, p) => sum + p.stepsMs, 0);
  const total = durations.reduce((sum, d) => sum + d, 0) + stepsMs;
  return {
    count: pauses.length,
    scavenges: pauses.filter((p) => p.minor).length,
    p50: percentile(durations, 50),
    p90: percentile(durations, 90),
    max: durations[durations.length - 1] ?? Number.NaN,
    stepsMs,
    pausedPercent: (100 * total) / windowMs,
  };
}
