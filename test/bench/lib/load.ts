/**
 * Closed-loop load: N workers, each issuing its next operation only once the previous one has
 * completed (a session's writer awaiting its append). A warm-up period runs the same load but is
 * not recorded, so JIT, connection pools and Postgres caches are warm when measuring starts.
 */
import { nowMs } from "./stats.js";

export interface ClosedLoopOptions<T> {
  readonly workers: number;
  readonly warmupMs: number;
  readonly measureMs: number;
  /** Builds the input of worker `worker`'s next operation; not timed. */
  readonly prepare: (worker: number) => T;
  /** One operation of worker `worker` (the timed part); a rejection stops the benchmark. */
  readonly op: (worker: number, input: T) => Promise<void>;
}

export interface ClosedLoopResult {
  /** Latency of every operation that started and ended inside the measured window, in ms. */
  readonly latencies: number[];
  readonly measuredMs: number;
  /** Operations per second over the measured window. */
  readonly opsPerSecond: number;
}

export async function closedLoop<T>(opts: ClosedLoopOptions<T>): Promise<ClosedLoopResult> {
  const start = nowMs();
  const measureFrom = start + opts.warmupMs;
  const end = measureFrom + opts.measureMs;
  const latencies: number[] = [];
  const worker = async (w: number): Promise<void> => {
    while (nowMs() < end) {
      const input = opts.prepare(w);
      const t0 = nowMs();
      await opts.op(w, input);
      const t1 = nowMs();
      if (t0 >= measureFrom && t1 <= end) latencies.push(t1 - t0);
    }
  };
  await Promise.all(Array.from({ length: opts.workers }, (_, w) => worker(w)));
  return { latencies, measuredMs: opts.measureMs, opsPerSecond: (latencies.length * 1000) / opts.measureMs };
}

export interface OpenLoopOptions<T> {
  readonly workers: number;
  /** Operations per second in total, spread evenly over the workers and staggered in time. */
  readonly rate: number;
  readonly warmupMs: number;
  readonly measureMs: number;
  readonly prepare: (worker: number) => T;
  readonly op: (worker: number, input: T) => Promise<void>;
}

export interface OpenLoopResult {
  /**
   * Latency of every operation due inside the measured window, in ms, counted from when it was
   * due rather than when it started: an operation held up behind a slow one counts its wait too,
   * so a stall is not hidden by the stall itself ("coordinated omission").
   */
  readonly latencies: number[];
  /** Operations per second completed, over the measured window. */
  readonly opsPerSecond: number;
}

/**
 * Open-loop load on a fixed schedule: operation k of worker w is due at
 * start + w * (interval / workers) + k * interval, whatever the previous one took, as sessions
 * appending at a steady pace would. A worker still runs one operation at a time (a session's
 * writer awaits its append before the next), so when one is late the next starts late and its
 * lateness is measured.
 */
export async function openLoop<T>(opts: OpenLoopOptions<T>): Promise<OpenLoopResult> {
  const interval = (opts.workers * 1000) / opts.rate;
  const start = nowMs() + 50;
  const measureFrom = start + opts.warmupMs;
  const end = measureFrom + opts.measureMs;
  const latencies: number[] = [];
  const worker = async (w: number): Promise<void> => {
    for (let due = start + (w * interval) / opts.workers; due < end; due += interval) {
      const input = opts.prepare(w);
      // Timers fire up to a millisecond early (they count whole milliseconds): wait out the rest.
      while (nowMs() < due) await new Promise((resolve) => setTimeout(resolve, Math.max(1, due - nowMs())));
      await opts.op(w, input);
      if (due >= measureFrom) latencies.push(nowMs() - due);
    }
  };
  await Promise.all(Array.from({ length: opts.workers }, (_, w) => worker(w)));
  return { latencies, opsPerSecond: (latencies.length * 1000) / opts.measureMs };
}
