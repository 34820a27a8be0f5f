/**
 * The only memory of past requests that changes an answer: how many times a given request has
 * been tried at a step, so `failFirst` can fail the first N attempts and let the next one through.
 * Bounded: the least recently used keys are forgotten first.
 */
export const DEFAULT_MAX_ATTEMPT_KEYS = 10_000;

export class AttemptCounter {
  readonly #counts = new Map<string, number>();
  readonly #maxKeys: number;

  constructor(maxKeys = DEFAULT_MAX_ATTEMPT_KEYS) {
    this.#maxKeys = maxKeys;
  }

  /** Records one more attempt for `key`; returns its number, starting at 1. */
  next(key: string): number {
    const n = (this.#counts.get(key) ?? 0) + 1;
    this.#counts.delete(key);
    this.#counts.set(key, n);
    if (this.#counts.size > this.#maxKeys) {
      const oldest = this.#counts.keys().next();
      if (oldest.done !== true) this.#counts.delete(oldest.value);
    }
    return n;
  }
}
