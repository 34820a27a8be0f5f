/** The one retry loop and its policy: the waits it takes (on an injected clock), when it stops, and what it throws. */
import { describe, expect, it } from "vitest";
import { MhError } from "../mh-error.js";
import { SizeLimit } from "../details/catalog.js";
import { DEFAULT_RETRY_POLICY, backoffMs, isRetryableError, retry, retryPolicy, sleep, type RetryPolicy } from "../index.js";

/** A clock that only moves when the loop sleeps: the test's subject is the waiting. */
function fakeClock(): { now: () => number; sleep: (ms: number) => Promise<boolean>; slept: number[] } {
  let t = 0;
  const slept: number[] = [];
  return {
    now: () => t,
    sleep: (ms) => {
      slept.push(ms);
      t += ms;
      return Promise.resolve(true);
    },
    slept,
  };
}

function failing(codes: string[], value = "ok"): () => Promise<string> {
  let n = 0;
  return () => {
    const code = codes[n++];
    return code === undefined ? Promise.resolve(value) : Promise.reject(new MhError(code as "UNAVAILABLE", `failure ${n}`));
  };
}

describe("retryPolicy", () => {
  it("documents its defaults and refuses a bad value naming it", () => {
    expect(retryPolicy()).toEqual(DEFAULT_RETRY_POLICY);
    expect(DEFAULT_RETRY_POLICY).toMatchObject({ initialIntervalMs: 100, maxIntervalMs: 5_000, multiplier: 2, jitter: 0.5, maxAttempts: 5 });
    expect(() => retryPolicy({ jitter: 2 })).toThrow(/retry\.jitter: must be within \[0, 1\], got 2/);
    expect(() => retryPolicy({ maxAttempts: 0 })).toThrow(/retry\.maxAttempts/);
    expect(() => retryPolicy({ multiplier: 0.5 })).toThrow(/retry\.multiplier/);
    expect(() => retryPolicy({ initialIntervalMs: Number.NaN })).toThrow(/retry\.initialIntervalMs/);
    expect(retryPolicy({ maxAttempts: Number.POSITIVE_INFINITY }).maxAttempts).toBe(Number.POSITIVE_INFINITY);
  });
});

describe("backoffMs", () => {
  const p = retryPolicy({ initialIntervalMs: 100, maxIntervalMs: 1_000, multiplier: 3, jitter: 0 });
  it("grows by the multiplier up to the cap", () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(p, n))).toEqual([100, 300, 900, 1_000]);
  });
  it("draws the jittered share at random: full jitter spans [0, backoff), half jitter [backoff/2, backoff)", () => {
    const full = { ...p, jitter: 1 };
    const half = { ...p, jitter: 0.5 };
    expect([backoffMs(full, 2, undefined, () => 0), backoffMs(full, 2, undefined, () => 0.999)]).toEqual([0, 299]);
    expect([backoffMs(half, 2, undefined, () => 0), backoffMs(half, 2, undefined, () => 0.999)]).toEqual([150, 299]);
  });
  it("honours a retry-after as a floor, still capped", () => {
    expect(backoffMs({ ...p, jitter: 1 }, 1, 700, () => 0)).toBe(700);
    expect(backoffMs(p, 1, 60_000)).toBe(1_000);
  });
});

describe("retry", () => {
  const policy: RetryPolicy = retryPolicy({ initialIntervalMs: 10, maxIntervalMs: 40, jitter: 0, maxAttempts: 4 });

  it("retries a retryable code with growing waits, then returns the answer", async () => {
    const clock = fakeClock();
    const seen: number[] = [];
    const out = await retry(policy, failing(["UNAVAILABLE", "DEADLINE_EXCEEDED", "UNAVAILABLE"]), {
      ...clock,
      onRetry: ({ attempt }) => seen.push(attempt),
    });
    expect(out).toBe("ok");
    expect(clock.slept).toEqual([10, 20, 40]);
    expect(seen).toEqual([1, 2, 3]);
  });

  it("throws the last failure unchanged after maxAttempts", async () => {
    const clock = fakeClock();
    await expect(retry(policy, failing(["UNAVAILABLE", "UNAVAILABLE", "UNAVAILABLE", "UNAVAILABLE"]), clock)).rejects.toThrow("failure 4");
    expect(clock.slept).toHaveLength(3);
  });

  it("does not retry a code outside the policy's, nor a message over a size limit", async () => {
    const clock = fakeClock();
    await expect(retry(policy, failing(["INVALID_ARGUMENT"]), clock)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    const tooBig = new MhError("RESOURCE_EXHAUSTED", "too big", { details: SizeLimit.of({ limit_bytes: 4 }) });
    expect(isRetryableError(tooBig, policy)).toBe(false);
    expect(isRetryableError(new MhError("RESOURCE_EXHAUSTED", "busy"), policy)).toBe(true);
    expect(isRetryableError(new TypeError("a bug"), policy)).toBe(false);
    expect(clock.slept).toEqual([]);
  });

  it("stops when the next wait would pass maxElapsedMs, and tells each attempt what is left", async () => {
    const clock = fakeClock();
    const left: number[] = [];
    const budget = retryPolicy({ ...policy, maxAttempts: Number.POSITIVE_INFINITY, maxElapsedMs: 50 });
    const err = await retry(
      budget,
      ({ remainingMs }) => {
        left.push(remainingMs);
        return Promise.reject(new MhError("UNAVAILABLE", "down"));
      },
      clock,
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "UNAVAILABLE" });
    expect(clock.slept).toEqual([10, 20]); // a third wait (40) would end at 70 > 50
    expect(left).toEqual([50, 40, 20]);
  });

  it("ends a wait when its signal aborts, with CANCELLED (or the caller's error)", async () => {
    const controller = new AbortController();
    const slow = retryPolicy({ initialIntervalMs: 60_000, maxIntervalMs: 60_000 });
    const pending = retry(slow, failing(["UNAVAILABLE"]), { signal: controller.signal, onRetry: () => controller.abort("stop") });
    await expect(pending).rejects.toMatchObject({ code: "CANCELLED", cause: "stop" });
    const custom = retry(slow, failing(["UNAVAILABLE"]), { signal: controller.signal, onAbort: (r) => new Error(`mine: ${String(r)}`) });
    await expect(custom).rejects.toThrow("mine: stop");
  });

  it("takes the caller's rule and retry-after", async () => {
    const clock = fakeClock();
    const out = await retry(policy, failing(["INVALID_ARGUMENT"]), { ...clock, isRetryable: () => true, retryAfterMs: () => 35 });
    expect(out).toBe("ok");
    expect(clock.slept).toEqual([35]);
  });
});

describe("sleep", () => {
  it("resolves true after the time, false at once on an aborted signal", async () => {
    expect(await sleep(1)).toBe(true);
    expect(await sleep(60_000, AbortSignal.abort())).toBe(false);
  });
});
