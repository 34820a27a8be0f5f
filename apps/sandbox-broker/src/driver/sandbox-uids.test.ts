/**
 * Sandbox uids across brokers: two pools over one range (as two brokers on one host) never hold
 * the same uid at once, a released uid is free again, a uid some process still runs as is never
 * handed out, and a range that overlaps a known user is refused.
 */
import { spawn } from "node:child_process";
import { eventually } from "@metaharness/service-kit/testing";
import { describe, expect, it } from "vitest";
import { SandboxUids, checkRange, runsProcesses } from "./sandbox-uids.js";

// A range of this test's own, far from the broker's default and from other test runs'.
const base = 2_100_000_000 + Math.floor(Math.random() * 1_000_000) * 2;

describe("SandboxUids", () => {
  it("never gives two pools (two brokers) the same uid, and frees a released one", async () => {
    const [a, b] = [new SandboxUids(base, 2), new SandboxUids(base, 2)];
    const first = await a.acquire();
    const second = await b.acquire();
    expect(second.uid).not.toBe(first.uid);
    expect([first.uid, second.uid].sort()).toEqual([base, base + 1]);
    await expect(a.acquire()).rejects.toThrow(/every sandbox uid of this host is in use/);
    await first.release();
    const again = await b.acquire();
    expect(again.uid).toBe(first.uid);
    await second.release();
    await again.release();
  });

  it("skips a uid that a process still runs as (a sandbox outliving its broker)", async () => {
    if (process.getuid?.() !== 0) return; // running a process as another user needs root
    const uid = base + 2;
    const child = spawn("/bin/sleep", ["60"], { uid, gid: uid, stdio: "ignore" });
    try {
      await eventually(async () => ((await runsProcesses(uid)) ? true : undefined), `a process running as ${uid}`, 10_000);
      await expect(new SandboxUids(uid, 1).acquire()).rejects.toThrow(/in use/);
    } finally {
      child.kill("SIGKILL");
    }
    await eventually(async () => ((await runsProcesses(uid)) ? undefined : true), `no process running as ${uid}`, 10_000);
    const got = await new SandboxUids(uid, 1).acquire();
    expect(got.uid).toBe(uid);
    await got.release();
  });

  it("refuses a range holding a user or group the host knows", async () => {
    await expect(checkRange(0, 10)).rejects.toThrow(/MH_SANDBOX_UID_BASE\/MH_SANDBOX_UID_COUNT: \/etc\/passwd names root with id 0/);
    await expect(checkRange(2_147_483_000, 1000)).rejects.toThrow(/below 2\^31 - 1/);
    await expect(checkRange(base, 10)).resolves.toBeUndefined();
  });
});
