/**
 * A server's retry-after, read from its headers: the floor under the model client's next wait
 * (the wait itself is the shared RetryPolicy's, @metaharness/errors).
 */

/** `retry-after-ms`, else `retry-after` in seconds or as an HTTP date; undefined if absent or bad. */
export function parseRetryAfter(headers: Headers | undefined, now = Date.now()): number | undefined {
  const ms = Number.parseFloat(headers?.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const raw = headers?.get("retry-after");
  if (raw === null || raw === undefined) return undefined;
  const seconds = Number.parseFloat(raw);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
