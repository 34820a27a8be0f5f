/**
 * The client's options in stages: what a caller may pass, the documented defaults, and the checked
 * values the client runs with (a bad number fails at construction, naming the option).
 */
import { invalidArgument, retryPolicy, type RetryPolicy } from "@metaharness/errors";

export interface RetryOptions {
  /** Attempts in all, the first included. Default 5. */
  readonly maxAttempts?: number;
  /** Backoff ceiling of the first retry; doubles per retry. Default 500 ms. */
  readonly initialDelayMs?: number;
  /** Cap on any one delay, retry-after included. Default 20 s. */
  readonly maxDelayMs?: number;
}

export interface ModelClientOptions {
  /** Default: the SDK's (ANTHROPIC_BASE_URL, else https://api.anthropic.com). */
  readonly baseURL?: string;
  readonly apiKey: string;
  /** Used when a request names no model. */
  readonly model: string;
  /** Used when a request sets no max_tokens. Default 8192. */
  readonly maxTokens?: number;
  readonly retry?: RetryOptions;
  /**
   * Per attempt, until the response starts (the SDK's timeout: it stops counting once headers
   * arrive, so it does not bound a stream's length). Default 10 minutes.
   */
  readonly timeoutMs?: number;
  /** Sent with every request, e.g. `anthropic-beta` or `x-mh-scenario`. */
  readonly defaultHeaders?: Readonly<Record<string, string>>;
  /** The jitter source, for tests. Default Math.random. */
  readonly random?: () => number;
}

export const DEFAULT_RETRY: Readonly<Required<RetryOptions>> = {
  maxAttempts: 5,
  initialDelayMs: 500,
  maxDelayMs: 20_000,
};
export const DEFAULT_MAX_TOKENS = 8192;
export const DEFAULT_TIMEOUT_MS = 600_000;

export interface ResolvedOptions {
  readonly baseURL: string | undefined;
  readonly apiKey: string;
  readonly model: string;
  readonly maxTokens: number;
  readonly retry: RetryPolicy;
  readonly timeoutMs: number;
  readonly defaultHeaders: Readonly<Record<string, string>>;
  readonly random: () => number;
}

function check(value: number, name: string, min: number, integer: boolean): number {
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    throw invalidArgument(name, `must be ${integer ? "an integer" : "a number"} >= ${min}, got ${value}`);
  }
  return value;
}

export function withDefaults(opts: ModelClientOptions): ResolvedOptions {
  if (opts.model === "") throw invalidArgument("model", "must not be empty");
  const retry = { ...DEFAULT_RETRY, ...opts.retry };
  return {
    baseURL: opts.baseURL,
    apiKey: opts.apiKey,
    model: opts.model,
    maxTokens: check(opts.maxTokens ?? DEFAULT_MAX_TOKENS, "maxTokens", 1, true),
    // Full jitter: a herd of harnesses refused by one overloaded API spreads out best.
    retry: retryPolicy({
      maxAttempts: check(retry.maxAttempts, "retry.maxAttempts", 1, true),
      initialIntervalMs: check(retry.initialDelayMs, "retry.initialDelayMs", 0, false),
      maxIntervalMs: check(retry.maxDelayMs, "retry.maxDelayMs", 0, false),
      multiplier: 2,
      jitter: 1,
    }),
    timeoutMs: check(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, "timeoutMs", 1, true),
    defaultHeaders: opts.defaultHeaders ?? {},
    random: opts.random ?? Math.random,
  };
}
