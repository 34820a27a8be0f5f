import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { deadline } from "./deadline.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/**
 * Resolves with how the signal ended, or "pending" if it had not after `ms`: a window on purpose,
 * since the deadline's own timer is the subject (and "not aborted" can only be seen over a time).
 */
function ended(signal: AbortSignal, ms: number): Promise<string> {
  return new Promise((resolve) => {
    const give = setTimeout(() => resolve("pending"), ms);
    signal.addEventListener("abort", () => {
      clearTimeout(give);
      resolve((signal.reason as Error).message);
    });
  });
}

describe("deadline", () => {
  it("aborts after its time even when a garbage collection runs while it waits", async () => {
    const source = new AbortController();
    const { signal } = deadline(200, source.signal);
    const outcome = ended(signal, 5000);
    setTimeout(gc, 50); // on purpose: a collection while the deadline's timer waits
    expect(await outcome).toBe("timed out after 200 ms");
    expect((signal.reason as Error).name).toBe("TimeoutError");
  });

  it("aborts with a source's reason, and not at all once cleared", async () => {
    const source = new AbortController();
    const first = deadline(60_000, source.signal);
    source.abort(new Error("interrupted"));
    expect(first.signal.reason).toEqual(new Error("interrupted"));
    first.clear();

    const second = deadline(50);
    second.clear();
    expect(await ended(second.signal, 300)).toBe("pending");
  });
});
