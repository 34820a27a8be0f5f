import { describe, expect, it } from "vitest";
import { MhError } from "@metaharness/errors";
import { WriteBatcher, type WriteBatcherOptions, type WriteOutcome } from "./write-batcher.js";

/** A controllable write: records each batch and resolves it when the test says so. */
function recorder(outcome: (item: number) => WriteOutcome<string> = (n) => ({ ok: true, value: `v${n}` })) {
  const batches: number[][] = [];
  const release: Array<() => void> = [];
  const write = (items: readonly number[]): Promise<Array<WriteOutcome<string>>> => {
    batches.push([...items]);
    return new Promise((resolve) => release.push(() => resolve(items.map(outcome))));
  };
  return { batches, release, write };
}

function batcher(
  write: WriteBatcherOptions<number, string>["write"],
  opts: Partial<WriteBatcherOptions<number, string>> = {},
): WriteBatcher<number, string> {
  return new WriteBatcher({ write, maxItems: 100, maxWeight: 100, weigh: () => 1, maxInFlight: 1, maxQueued: 1000, ...opts });
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("WriteBatcher", () => {
  it("writes the first item at once and gathers the rest while it is in flight", async () => {
    const r = recorder();
    const b = batcher(r.write);
    const first = b.write(1);
    const rest = [2, 3, 4].map((n) => b.write(n));
    expect(r.batches).toEqual([[1]]);
    r.release.shift()?.();
    expect(await first).toBe("v1");
    await tick();
    expect(r.batches).toEqual([[1], [2, 3, 4]]);
    r.release.shift()?.();
    expect(await Promise.all(rest)).toEqual(["v2", "v3", "v4"]);
    await b.idle();
  });

  it("keeps batches within maxItems and maxWeight, and sends a heavier item alone", async () => {
    const r = recorder();
    const b = batcher(r.write, { maxItems: 2, maxWeight: 10, weigh: (n) => n });
    const all = [1, 2, 3, 4, 20, 5].map((n) => b.write(n));
    for (let i = 0; i < 5 && r.release.length > 0; i++) {
      r.release.shift()?.();
      await tick();
    }
    await Promise.all(all);
    expect(r.batches).toEqual([[1], [2, 3], [4], [20], [5]]);
  });

  it("runs up to maxInFlight batches at once", async () => {
    const r = recorder();
    const b = batcher(r.write, { maxInFlight: 2 });
    const all = [1, 2, 3].map((n) => b.write(n));
    expect(r.batches).toEqual([[1], [2]]);
    r.release.shift()?.();
    await tick();
    expect(r.batches).toEqual([[1], [2], [3]]);
    for (const release of r.release.splice(0)) release();
    await tick();
    r.release.shift()?.();
    expect(await Promise.all(all)).toEqual(["v1", "v2", "v3"]);
  });

  it("fails only the items whose outcome is an error", async () => {
    const conflict = new MhError("FAILED_PRECONDITION", "no");
    const r = recorder((n) => (n === 2 ? { ok: false, error: conflict } : { ok: true, value: `v${n}` }));
    const b = batcher(r.write);
    const first = b.write(0);
    const rest = [1, 2, 3].map((n) => b.write(n));
    r.release.shift()?.();
    await first;
    await tick();
    r.release.shift()?.();
    const settled = await Promise.allSettled(rest);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((settled[1] as PromiseRejectedResult).reason).toBe(conflict);
  });

  it("writes each item alone when a batch throws, so only the culprit fails", async () => {
    const seen: number[][] = [];
    const write = (items: readonly number[]): Promise<Array<WriteOutcome<string>>> => {
      seen.push([...items]);
      if (items.includes(13)) return Promise.reject(new Error("statement failed"));
      return Promise.resolve(items.map((n) => ({ ok: true as const, value: `v${n}` })));
    };
    let hold: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (hold = resolve));
    const b = batcher(async (items) => {
      if (items.includes(0)) await gate;
      return write(items);
    });
    const first = b.write(0);
    const rest = [12, 13, 14].map((n) => b.write(n));
    hold();
    await first;
    const settled = await Promise.allSettled(rest);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(seen).toEqual([[0], [12, 13, 14], [12], [13], [14]]);
  });

  it("refuses writes beyond maxQueued with RESOURCE_EXHAUSTED", async () => {
    const r = recorder();
    const b = batcher(r.write, { maxQueued: 2 });
    const accepted = [b.write(1), b.write(2), b.write(3)];
    const err = await b.write(4).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MhError);
    expect((err as MhError).code).toBe("RESOURCE_EXHAUSTED");
    r.release.shift()?.();
    await tick();
    r.release.shift()?.();
    expect(await Promise.all(accepted)).toEqual(["v1", "v2", "v3"]);
  });

  it("rejects every item of a batch whose write returns the wrong number of outcomes", async () => {
    let hold: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (hold = resolve));
    const b = batcher(async (items) => {
      if (items[0] === 0) await gate;
      return [{ ok: true, value: `v${items[0]}` }];
    });
    const first = b.write(0);
    const pair = [b.write(1), b.write(2)];
    hold();
    expect(await first).toBe("v0");
    const settled = await Promise.allSettled(pair);
    expect(settled.map((s) => s.status === "rejected" && (s.reason as MhError).code)).toEqual(["INTERNAL", "INTERNAL"]);
  });
});
