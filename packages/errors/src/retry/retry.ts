/**
 * retry(): the one retry loop. It runs an attempt, and on a failure the policy allows (its code,
 * attempts and time left) waits the policy's backoff and runs it again; otherwise it throws the
 * last failure unchanged. Only for operations that are safe to repeat: callers say why theirs is.
 * Time and randomness can be injected, for tests whose subject is the waiting.
 */
import { MhError } from "../mh-error.js";
import { SizeLimit } from "../details/catalog.js";
import { backoffMs, type RetryPolicy } from "./policy.js";
import { sleep as realSleep } from "./sleep.js";

export interface AttemptInfo {
  /** 1-based. */
  readonly attempt: number;
  /** What is left of the policy's maxElapsedMs (Infinity without one): a deadline for this attempt. */
  readonly remainingMs: number;
}

export interface RetryInfo {
  /** The attempt that failed (1-based). */
  readonly attempt: number;
  /** The wait before the next one. */
  readonly delayMs: number;
  readonly error: unknown;
}

export interface RetryOptions {
  /** Aborting stops the waiting (and no further attempt starts). */
  readonly signal?: AbortSignal;
  /** Whether a failure is worth another attempt. Default: `isRetryableError(err, policy)`. */
  readonly isRetryable?: (err: unknown, attempt: number) => boolean;
  /** A floor under the next wait, e.g. a server's retry-after (still capped by maxIntervalMs). */
  readonly retryAfterMs?: (err: unknown) => number | undefined;
  /** Told before each wait. */
  readonly onRetry?: (info: RetryInfo) => void;
  /** The error thrown when `signal` aborts. Default: MhError CANCELLED, the reason as cause. */
  readonly onAbort?: (reason: unknown) => unknown;
  /** @default Math.random */
  readonly random?: () => number;
  /** @default Date.now */
  readonly now?: () => number;
  /** @default the real, abortable sleep */
  readonly sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<boolean>;
}

/**
 * Whether the policy retries `err`: its code (an error that is no MhError, INTERNAL) is one of
 * the policy's, and it is not a refusal of a message over a size limit (RESOURCE_EXHAUSTED with a
 * SizeLimit detail, as grpc-js's size checks and our own say), which no repetition passes.
 */
export function isRetryableError(err: unknown, policy: Pick<RetryPolicy, "retryableCodes">): boolean {
  const e = MhError.from(err);
  return policy.retryableCodes.has(e.code) && SizeLimit.find(e) === undefined;
}

export async function retry<T>(policy: RetryPolicy, fn: (info: AttemptInfo) => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const now = opts.now ?? Date.now;
  const wait = opts.sleep ?? realSleep;
  const isRetryable = opts.isRetryable ?? ((err: unknown) => isRetryableError(err, policy));
  const aborted = (): unknown => (opts.onAbort ?? cancelled)(opts.signal?.reason);
  const started = now();
  for (let attempt = 1; ; attempt++) {
    if (opts.signal?.aborted === true) throw aborted();
    try {
      return await fn({ attempt, remainingMs: policy.maxElapsedMs - (now() - started) });
    } catch (err) {
      if (attempt >= policy.maxAttempts || !isRetryable(err, attempt)) throw err;
      const delayMs = backoffMs(policy, attempt, opts.retryAfterMs?.(err), opts.random);
      if (now() + delayMs - started > policy.maxElapsedMs) throw err;
      opts.onRetry?.({ attempt, delayMs, error: err });
      if (!(await wait(delayMs, opts.signal))) throw aborted();
    }
  }
}

function cancelled(reason: unknown): MhError {
  return new MhError("CANCELLED", "the operation was cancelled while waiting to retry", { cause: reason });
}
