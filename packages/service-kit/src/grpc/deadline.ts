/**
 * A signal that aborts when any of the given signals does, or after a time. Not
 * `AbortSignal.any([...signals, AbortSignal.timeout(ms)])`: Node 20's composite signal holds its
 * sources weakly, and nothing else holds that timeout signal, so a garbage collection before it
 * fires loses it and the wait never ends (nodejs/node#57736; it hung a harness waiting for a
 * self-hosted worker). Here the timer holds its controller strongly until it fires or is cleared.
 */
export interface Deadline {
  readonly signal: AbortSignal;
  /** Stops the timer once the wait is over, so a long deadline does not linger. */
  clear(): void;
}

export function deadline(ms: number, ...signals: readonly AbortSignal[]): Deadline {
  const timer = new AbortController();
  // The reason AbortSignal.timeout gives, so callers that tell a timeout by its name still do.
  const handle = setTimeout(() => timer.abort(new DOMException(`timed out after ${ms} ms`, "TimeoutError")), ms);
  // Like AbortSignal.timeout, the deadline alone does not keep the process running.
  handle.unref();
  return { signal: AbortSignal.any([...signals, timer.signal]), clear: () => clearTimeout(handle) };
}
