/**
 * Order statistics for latency samples. Percentiles are nearest-rank on the sorted samples (no
 * interpolation), so every figure printed is a latency that was actually observed; with n samples
 * a p99 is only meaningful when n is well above 100, which is why each summary carries its n.
 */

export interface Summary {
  readonly n: number;
  readonly min: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

/** Nearest-rank percentile (0 < p <= 100) of ascending `sorted`; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((acc, x) => acc + x, 0);
  return {
    n: sorted.length,
    min: sorted[0] ?? Number.NaN,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    mean: sorted.length === 0 ? Number.NaN : sum / sorted.length,
  };
}

/** Milliseconds, sub-millisecond resolution, monotonic. */
export function nowMs(): number {
  return performance.now();
}

/** Times one awaited operation in milliseconds. */
export async function timed(op: () => Promise<unknown>): Promise<number> {
  const start = nowMs();
  await op();
  return nowMs() - start;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
