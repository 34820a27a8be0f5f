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
