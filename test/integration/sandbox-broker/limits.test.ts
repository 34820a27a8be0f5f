/**
 * How limits are enforced: cgroups where this machine lets the broker create them (CPU share
 * throttled, the enforcement named in Describe), and the prlimit fallback where it does not
 * (forced here with MH_CGROUP_MODE=none), which must still contain a memory bomb.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provision, run, startTestBroker, type TestBroker } from "../../support/sandbox-broker.js";

const MiB = 1024 * 1024;
const BUSY_FOR_ONE_SECOND =
  "bash -c 'while :; do :; done' & pid=$!; sleep 1; ticks=$(cut -d' ' -f14 /proc/$pid/stat); kill $pid; echo $ticks";

let broker: TestBroker;
let fallback: TestBroker;

beforeAll(async () => {
  broker = await startTestBroker();
  fallback = await startTestBroker({ MH_CGROUP_MODE: "none" });
});
afterAll(async () => {
  await fallback?.stop();
  await broker?.stop();
});

describe("limits", () => {
  it("names how they are enforced, per sandbox", async () => {
    const res = await broker.client.provision({ sessionId: "sesn_limits", resources: undefined, handKind: "" });
    expect(res.sandbox?.limits).toBe(broker.handle.limits);
    expect(broker.handle.limits).toMatch(/cgroup|prlimit/);
    expect(fallback.handle.limits).toContain("prlimit fallback: memory, pids");
  });

  it("a busy loop gets no more than its CPU share", async () => {
    const id = await provision(broker.client, "sesn_limits", { cpuMillis: 100 });
    const res = await run(broker.client, id, "bash", { command: BUSY_FOR_ONE_SECOND });
    // 100 millicpus for ~1 s is ~10 ticks of 10 ms; unthrottled it would be up to ~100.
    expect(Number(res.output)).toBeLessThan(35);
  });

  it("without cgroups, prlimit still contains a memory bomb", async () => {
    const id = await provision(fallback.client, "sesn_limits", { memoryBytes: 64 * MiB });
    const bomb = await run(fallback.client, id, "bash", { command: "perl -e '$x = q(a) x (1024*1024*1024); print length $x'" });
    expect(bomb.isError).toBe(true);
    expect(bomb.output).toMatch(/Out of memory|Cannot allocate/i);
    expect((await run(fallback.client, id, "bash", { command: "echo alive" })).output).toBe("alive");
  });
});
