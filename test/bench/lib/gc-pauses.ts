/**
 * The garbage-collection pauses of a benchmark's two Node processes: this one (the client), from
 * perf_hooks "gc" entries, which say when each pause began; and the service's, from the lines its
 * --trace-gc flag prints, which give durations only (its clock is not ours). Why: here a
 * scavenge of either process stops it for several milliseconds, the client's about once per 50
 * GetEvents calls, so a tail latency is often a pause rather than the code under test: node:http2
 * and grpc-js keep a finished call's objects reachable until a later collection, so each
 * scavenge copies 15-30% of what was allocated since the one before (README, "Garbage collection").
 */
import { PerformanceObserver, constants, type PerformanceEntry } from "node:perf_hooks";
import { percentile } from "./stats.js";

export interface Pause {
  /** When it began, on performance.now()'s clock (NaN for the service's). */
  readonly startMs: number;
  readonly ms: number;
  /** A scavenge (young generation) rather than a mark-compact or its incremental steps. */
  readonly minor: boolean;
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
  return { startMs: entry.startTime, ms: entry.duration, minor: kind === constants.NODE_PERFORMANCE_GC_MINOR };
}

// "[pid:0x...]   2345 ms: Scavenge 4.1 (5.3) -> 3.6 (6.3) MB, 1.05 / 0.00 ms  (average mu ..."
const TRACE_LINE = /\d+ ms: (Scavenge|Mark-Compact|Minor Mark-Compact)\b[^,\n]*MB, ([\d.]+) \/ [\d.]+ ms/g;

/** The pauses in `output` written by a process started with TRACE_GC. */
export function tracedPauses(output: string): Pause[] {
  return [...output.matchAll(TRACE_LINE)].map((m) => ({
    startMs: Number.NaN,
    ms: Number(m[2]),
    minor: m[1] === "Scavenge",
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
  /** Percent of the window the process stood still. */
  readonly pausedPercent: number;
}

export function summarizePauses(pauses: readonly Pause[], windowMs: number): PauseSummary {
  const durations = pauses.map((p) => p.ms).sort((a, b) => a - b);
  const total = durations.reduce((sum, d) => sum + d, 0);
  return {
    count: pauses.length,
    scavenges: pauses.filter((p) => p.minor).length,
    p50: percentile(durations, 50),
    p90: percentile(durations, 90),
    max: durations[durations.length - 1] ?? Number.NaN,
    pausedPercent: (100 * total) / windowMs,
  };
}
