/**
 * The reaper's decisions with time as the subject, at the times a test names (sweep(now) is its
 * only clock): idle past idle_timeout only with no call running, old past its lifetime busy or
 * not, each at its exact boundary, an ended sandbox left alone, and an idle one paused instead of
 * released when the broker keeps workspaces. Real sandboxes reaped in real time:
 * test/integration/sandbox-broker/lifecycle.test.ts.
 */
import { describe, expect, it } from "vitest";
import { SandboxState } from "@metaharness/proto";
import type { LiveSandbox } from "./live.js";
import { Reaper } from "./reaper.js";

/** A live sandbox as the reaper reads it: its times, limits and calls running (nothing else of it is used). */
function sandbox(id: string, o: { createdAt?: number; lastUsedAt?: number; lifetimeSeconds?: number; idleTimeoutSeconds?: number; inFlight?: number } = {}): LiveSandbox {
  const limits = { cpuMillis: 1000, memoryBytes: 0, diskBytes: 0, maxProcesses: 0, lifetimeSeconds: o.lifetimeSeconds ?? 3600, idleTimeoutSeconds: o.idleTimeoutSeconds ?? 60 };
  return { id, sessionId: "sesn_1", limits, createdAt: o.createdAt ?? 0, lastUsedAt: o.lastUsedAt ?? 0, runtime: { inFlight: o.inFlight ?? 0 } } as unknown as LiveSandbox;
}

/** The live set: its sandboxes, and the ends asked for. */
function liveOf(sandboxes: LiveSandbox[]): { all(): LiveSandbox[]; end(id: string, state: SandboxState, reason: string, cause?: string): Promise<void>; ends: string[] } {
  const ends: string[] = [];
  return {
    all: () => sandboxes,
    end(id, state, reason, cause) {
      ends.push(`${id}: ${reason} (${cause})`);
      const s = sandboxes.find((x) => x.id === id);
      if (s !== undefined) s.ended = { state, reason };
      return Promise.resolve();
    },
    ends,
  };
}

describe("Reaper.sweep", () => {
  it("releases an idle sandbox at its idle timeout, not a millisecond before, and only with no call running", () => {
    const idle = sandbox("sbx_idle", { lastUsedAt: 10_000, idleTimeoutSeconds: 60 });
    const busy = sandbox("sbx_busy", { lastUsedAt: 10_000, idleTimeoutSeconds: 60, inFlight: 1 });
    const live = liveOf([idle, busy]);
    const reaper = new Reaper(live, 1000);
    expect(reaper.sweep(69_999)).toBe(0);
    expect(reaper.sweep(70_000)).toBe(1);
    expect(live.ends).toEqual(["sbx_idle: idle for 60 s (its idle timeout) (idle_timeout)"]);
    // Ended: the next passes leave it alone; the busy one stays while its call runs.
    expect(reaper.sweep(1_000_000)).toBe(0);
  });

  it("releases a sandbox at the end of its lifetime, busy or not", () => {
    const old = sandbox("sbx_old", { createdAt: 5_000, lastUsedAt: 7_499, lifetimeSeconds: 2, inFlight: 3 });
    const live = liveOf([old]);
    const reaper = new Reaper(live, 1000);
    expect(reaper.sweep(6_999)).toBe(0);
    expect(reaper.sweep(7_000)).toBe(1);
    expect(live.ends).toEqual(["sbx_old: its lifetime of 2 s is over (lifetime)"]);
    expect(old.ended).toEqual({ state: SandboxState.SANDBOX_STATE_RELEASED, reason: "its lifetime of 2 s is over" });
  });

  it("pauses an idle sandbox instead when it can, once while the pause runs, and releases one it cannot pause", async () => {
    const paused = sandbox("sbx_paused", { idleTimeoutSeconds: 1 });
    const other = sandbox("sbx_other", { idleTimeoutSeconds: 1 });
    const live = liveOf([paused, other]);
    let finish: () => void = () => undefined;
    const pauses: string[] = [];
    const reaper = new Reaper(live, 1000, (s) => {
      if (s.id !== "sbx_paused") return false;
      pauses.push(s.id);
      return new Promise<void>((resolve) => (finish = resolve));
    });
    expect(reaper.sweep(1_000)).toBe(2);
    expect(reaper.sweep(2_000)).toBe(0); // still pausing: not asked again
    expect(pauses).toEqual(["sbx_paused"]);
    expect(live.ends).toEqual(["sbx_other: idle for 1 s (its idle timeout) (idle_timeout)"]);
    finish();
    await new Promise((resolve) => setImmediate(resolve)); // the pause's end settles
    expect(reaper.sweep(3_000)).toBe(1); // paused and still listed (resumed, say): asked again
    expect(pauses).toEqual(["sbx_paused", "sbx_paused"]);
  });
});
