/**
 * Output pacing: the first token at `ttftMs`, then tokens at `tokensPerSecond`, scheduled against
 * a fixed start so timer lateness does not add up over a long answer. Waits end early (returning
 * false) when the signal aborts: the client went away or the server is closing.
 */

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

export class Pacer {
  readonly #firstTokenAt: number;
  readonly #msPerToken: number;
  readonly #signal: AbortSignal;
  #tokens = 0;

  /** `tokensPerSecond` 0 (or Infinity) sends everything after the first token without pauses. */
  constructor(ttftMs: number, tokensPerSecond: number, signal: AbortSignal, now = Date.now()) {
    this.#firstTokenAt = now + ttftMs;
    this.#msPerToken = tokensPerSecond > 0 && Number.isFinite(tokensPerSecond) ? 1000 / tokensPerSecond : 0;
    this.#signal = signal;
  }

  /** Waits until the next `tokens` tokens are due; false if aborted meanwhile. */
  async take(tokens: number): Promise<boolean> {
    const due = this.#firstTokenAt + this.#tokens * this.#msPerToken;
    this.#tokens += tokens;
    return sleep(due - Date.now(), this.#signal);
  }

  /** Milliseconds from now until `tokens` tokens would have been produced (for JSON responses). */
  msUntilDone(tokens: number): number {
    return Math.max(0, this.#firstTokenAt + tokens * this.#msPerToken - Date.now());
  }
}

/** Splits text into pieces of `charsPerChunk` characters, never inside a surrogate pair. */
export function chunk(text: string, charsPerChunk: number): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += charsPerChunk) out.push(chars.slice(i, i + charsPerChunk).join(""));
  return out;
}
