import { describe, expect, it } from "vitest";
import { IdleWait, type WatchLease } from "./idle-wait.js";

function rig(recheckMs: number, lease: WatchLease = undefined) {
  const state = { lease, overs: 0 };
  const controller = new AbortController();
  const idle = new IdleWait(recheckMs, controller.signal, {
    get: () => state.lease,
    over: () => {
      state.lease = "over";
      state.overs += 1;
    },
  });
  return { idle, state, controller };
}

describe("IdleWait", () => {
  it("ends at a poke, and a poke between waits is nothing", async () => {
    const { idle } = rig(60_000);
    idle.wake("poke");
    const waiting = idle.wait();
    expect(waiting).toBeDefined();
    idle.wake("poke");
    await waiting;
    idle.stop();
  });

  it("ends each wait at the recheck period with its one timer, also after it fired between waits", async () => {
    const { idle, state } = rig(20);
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      await idle.wait();
      expect(performance.now() - started).toBeGreaterThanOrEqual(15);
    }
    // Fired once with no wait: the next wait still ends.
    await new Promise((resolve) => setTimeout(resolve, 40));
    await idle.wait();
    expect(state.overs).toBe(0);
    idle.stop();
  });

  it("waits to the lease's end when it comes first, and the lease is over then; the recheck timer firing meanwhile does not end it", async () => {
    const { idle, state } = rig(100);
    const first = idle.wait(); // the recheck timer made, due 100 ms from now
    idle.wake("poke");
    await first;
    await rig(40).idle.wait(); // 40 ms pass
    const started = performance.now();
    state.lease = started + 90; // before the recheck period: the wait ends then, after the stale timer (~60 ms)
    await idle.wait();
    expect(performance.now() - started).toBeGreaterThanOrEqual(85);
    expect(state).toEqual({ lease: "over", overs: 1 });
    expect(idle.wait()).toBeUndefined();
    idle.stop();
  });

  it("waits on when told the lease moved, to its new end, and ends at once when it is over", async () => {
    const { idle, state } = rig(60_000, performance.now() + 30);
    const started = performance.now();
    const waiting = idle.wait();
    state.lease = performance.now() + 90;
    idle.wake("lease");
    await waiting;
    expect(performance.now() - started).toBeGreaterThanOrEqual(85);
    expect(state.lease).toBe("over");

    const other = rig(60_000, performance.now() + 60_000);
    const long = other.idle.wait();
    other.state.lease = "over";
    other.idle.wake("lease");
    await long;
    other.idle.stop();
    idle.stop();
  });

  it("has nothing to wait for once aborted or past the lease's end", () => {
    const { idle, controller } = rig(60_000);
    controller.abort();
    expect(idle.wait()).toBeUndefined();
    const past = rig(60_000, performance.now() - 1);
    expect(past.idle.wait()).toBeUndefined();
    expect(past.state).toEqual({ lease: "over", overs: 1 });
  });
});
