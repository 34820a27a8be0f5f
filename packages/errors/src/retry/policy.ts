/**
 * RetryPolicy: when a failed operation is tried again, and how long to wait first. One shape for
 * every retry in the codebase (model calls, gRPC calls, the outbox relay, git clones, the event
 * bus), after Temporal's grpc-retry: capped exponential backoff with jitter, a count and a time
 * budget, and the codes worth retrying. `retryPolicy()` fills in the documented defaults and
 * refuses a bad value naming it, so a policy is checked once, where it is made.
 */
import { RETRYABLE_CODES, type CodeName } from "../code.js";
import { invalidArgument } from "../mh-error.js";

export interface RetryPolicy {
  /**
   * The backoff before the first retry, before jitter.
   * @default 100
   */
  readonly initialIntervalMs: number;
  /**
   * The cap on any one backoff (a server's retry-after included).
   * @default 5_000
   */
  readonly maxIntervalMs: number;
  /**
   * Each further retry's backoff is the one before times this.
   * @default 2
   */
  readonly multiplier: number;
  /**
   * The share of each backoff drawn at random, so clients refused together do not come back
   * together: 1 waits anywhere in [0, backoff) ("full jitter"), 0.5 in [backoff/2, backoff), 0
   * exactly the backoff.
   * @default 0.5
   */
  readonly jitter: number;
  /**
   * Attempts in all, the first included; Infinity to be bounded by `maxElapsedMs` alone.
   * @default 5
   */
  readonly maxAttempts: number;
  /**
   * No retry starts later than this after the first attempt began (Infinity: no such bound).
   * @default Infinity
   */
  readonly maxElapsedMs: number;
  /**
   * The codes a failure is retried on (an error that is no MhError counts as INTERNAL).
   * @default RETRYABLE_CODES: UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED
   */
  readonly retryableCodes: ReadonlySet<CodeName>;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  initialIntervalMs: 100,
  maxIntervalMs: 5_000,
  multiplier: 2,
  jitter: 0.5,
  maxAttempts: 5,
  maxElapsedMs: Number.POSITIVE_INFINITY,
  retryableCodes: RETRYABLE_CODES,
});

/** A policy from the defaults and `overrides`; a value out of range is INVALID_ARGUMENT naming it. */
export function retryPolicy(overrides: Partial<RetryPolicy> = {}): RetryPolicy {
  const p = { ...DEFAULT_RETRY_POLICY, ...overrides };
  atLeast(p.initialIntervalMs, 0, "initialIntervalMs");
  atLeast(p.maxIntervalMs, 0, "maxIntervalMs");
  atLeast(p.multiplier, 1, "multiplier");
  if (!(p.jitter >= 0 && p.jitter <= 1)) throw invalidArgument("retry.jitter", `must be within [0, 1], got ${p.jitter}`);
  if (!(p.maxAttempts >= 1) || (p.maxAttempts !== Number.POSITIVE_INFINITY && !Number.isInteger(p.maxAttempts))) {
    throw invalidArgument("retry.maxAttempts", `must be an integer >= 1 or Infinity, got ${p.maxAttempts}`);
  }
  if (!(p.maxElapsedMs >= 0)) throw invalidArgument("retry.maxElapsedMs", `must be >= 0, got ${p.maxElapsedMs}`);
  return Object.freeze(p);
}

function atLeast(value: number, min: number, name: string): void {
  if (!Number.isFinite(value) || value < min) throw invalidArgument(`retry.${name}`, `must be a number >= ${min}, got ${value}`);
}

/**
 * The wait before the retry that follows failed attempt `failed` (1-based): the backoff
 * min(max, initial * multiplier^(failed-1)), jittered, and a server's retry-after honoured as a
 * floor but still capped.
 */
export function backoffMs(
  policy: RetryPolicy,
  failed: number,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxIntervalMs, policy.initialIntervalMs * policy.multiplier ** Math.max(failed - 1, 0));
  const jittered = Math.floor(ceiling * (1 - policy.jitter) + random() * ceiling * policy.jitter);
  if (retryAfterMs === undefined) return jittered;
  return Math.min(policy.maxIntervalMs, Math.max(retryAfterMs, jittered));
}
