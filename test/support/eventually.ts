/**
 * The one wait of the tests: poll a condition until it holds, never sleep a fixed time hoping it
 * does. `probe` returns the value waited for, or undefined while it is not there yet; past the
 * timeout the wait fails saying what it waited for (`what` may be a function, to describe the
 * last state seen: the events so far, say).
 */

/** How often a probe is asked again. */
const POLL_MS = 50;

export async function eventually<T>(probe: () => Promise<T | undefined>, what: string | (() => string), timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${typeof what === "string" ? what : what()}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
