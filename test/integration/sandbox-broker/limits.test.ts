/**
 * How limits are enforced: cgroups where this machine lets the broker create them (CPU share
 * throttled, the enforcement named in Describe), and the prlimit fallback where it does not
 * (forced here with MH_CGROUP_MODE=none), which must still contain a memory bomb.
 */
import { existsSync, readFileSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provision, run, startTestBroker, type TestBroker } from "../../support/sandbox-broker.js";

const MiB = 1024 * 1024;
const BUSY_FOR_ONE_SECOND =
  "bash -c 'while :; do :; done' & pid=$!; sleep 1; ticks=$(cut -d' ' -f14 /proc/$pid/stat); kill $pid; echo $ticks";

/** The cgroup directories (one per v1 hierarchy, or the v2 one) the broker made for a sandbox. */
async function cgroupDirs(sandboxId: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > 6) return;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const path = join(dir, e.name);
      if (e.name === sandboxId) out.push(path);
      else await walk(path, depth + 1);
    }
  };
  await walk("/sys/fs/cgroup", 0);
  return out;
}

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
    const res = await broker.client.provision({ fork: undefined, key: "", sessionId: "sesn_limits", resources: undefined, handKind: "" });
    expect(res.sandbox?.limits).toBe(broker.handle.limits);
    expect(broker.handle.limits).toMatch(/cgroup|prlimit/);
    expect(fallback.handle.limits).toContain("prlimit fallback: memory, pids");
  });

  it("a sandbox's memory limit covers swap too, where the kernel accounts swap", async () => {
    const id = await provision(broker.client, "sesn_limits", { memoryBytes: 64 * MiB });
    const dirs = await cgroupDirs(id);
    const memory = dirs.find((d) => existsSync(join(d, "memory.limit_in_bytes")) || existsSync(join(d, "memory.max")));
    if (memory === undefined) {
      expect(broker.handle.limits).not.toMatch(/cgroup.*memory/); // no memory cgroup here: prlimit
      return;
    }
    if (existsSync(join(memory, "memory.memsw.limit_in_bytes"))) {
      // The group's limit is the sandbox's memory plus its tmpfs budgets (files in RAM count too).
      const limit = Number(readFileSync(join(memory, "memory.limit_in_bytes"), "utf8"));
      expect(limit).toBeGreaterThanOrEqual(64 * MiB);
      expect(limit).toBeLessThan(2 ** 40);
      expect(Number(readFileSync(join(memory, "memory.memsw.limit_in_bytes"), "utf8"))).toBe(limit);
    } else if (existsSync(join(memory, "memory.swap.max"))) {
      expect(readFileSync(join(memory, "memory.swap.max"), "utf8").trim()).toBe("0");
    }
  });

  it("a busy loop gets no more than its CPU share", async () => {
    const id = await provision(broker.client, "sesn_limits", { cpuMillis: 100 });
    const res = await run(broker.client, id, "bash", { command: BUSY_FOR_ONE_SECOND });
    // 100 millicpus for ~1 s is ~10 ticks of 10 ms; unthrottled it would be up to ~100.
    expect(Number(res.output)).toBeLessThan(35);
  });

  it("without cgroups, one sandbox at its process limit leaves the others theirs", async () => {
    // Every sandbox runs as the same host uid, and RLIMIT_NPROC set on the way into the sandbox
    // counted that uid's processes in all of them: a full sandbox made forks fail in the others.
    const [full, other] = [await provision(fallback.client, "sesn_limits", { maxProcesses: 32 }), await provision(fallback.client, "sesn_limits", { maxProcesses: 32 })];
    const holder = run(fallback.client, full, "bash", {
      // perl, not bash: bash retries a failed fork for seconds. Forks until refused and says how
      // many, and when (its children live 4 s from then, at least).
      command: "perl -MTime::HiRes=time -e 'my $n = 0; for (1..200) { my $p = fork(); last unless defined $p; if (!$p) { sleep 4; exit 0 } $n++ } printf(\"%d %.3f\\n\", $n, time); sleep 3'",
      timeout_ms: 20_000,
    });
    // A fixed wait on purpose (paces the load): the fork bomb runs a while before the other sandbox forks.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const meanwhile = await run(fallback.client, other, "bash", {
      command: "perl -MTime::HiRes=time -e 'for (1..5) { my $p = fork(); die \"fork: $!\\n\" unless defined $p; exit 0 unless $p; waitpid($p, 0) } printf(\"forked %.3f\\n\", time)'",
    });
    const [count, fullAt] = (await holder).output.split(" ").map(Number);
    expect(meanwhile.isError).toBe(false);
    const [word, forkedAt] = meanwhile.output.split(" ");
    expect(word).toBe("forked");
    // The other sandbox forked while the full one held every process it could.
    expect(Number(forkedAt)).toBeGreaterThan(fullAt ?? Number.NaN);
    expect(Number(forkedAt)).toBeLessThan((fullAt ?? Number.NaN) + 3);
    // The full one was stopped at its own limit (its agent and shell count too).
    expect(count).toBeGreaterThan(15);
    expect(count).toBeLessThan(32);
  });

  it("without cgroups, prlimit still contains a memory bomb", async () => {
    const id = await provision(fallback.client, "sesn_limits", { memoryBytes: 64 * MiB });
    const bomb = await run(fallback.client, id, "bash", { command: "perl -e '$x = q(a) x (1024*1024*1024); print length $x'" });
    expect(bomb.isError).toBe(true);
    expect(bomb.output).toMatch(/Out of memory|Cannot allocate/i);
    expect((await run(fallback.client, id, "bash", { command: "echo alive" })).output).toBe("alive");
  });
});
