/**
 * Hostile code against real bubblewrap: each attack is contained and comes back as a tool
 * result, while the broker and a bystander sandbox keep working.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SandboxState } from "@metaharness/proto";
import { eventually } from "../../support/eventually.js";
import { provision, run, startTestBroker, type TestBroker } from "../../support/sandbox-broker.js";

const MiB = 1024 * 1024;
const CANARY = `mh-canary-${Math.random().toString(36).slice(2)}`;
const sessionId = "sesn_hostile";

let broker: TestBroker;
let bystander: string;

beforeAll(async () => {
  // A secret in the broker's own environment must never reach a sandbox.
  process.env["MH_TEST_CANARY_SECRET"] = CANARY;
  broker = await startTestBroker({ MH_OUTPUT_CAP_BYTES: String(64 * 1024) });
  bystander = await provision(broker.client, "sesn_bystander");
});
afterAll(async () => {
  delete process.env["MH_TEST_CANARY_SECRET"];
  await broker?.stop();
});
afterEach(async () => {
  // Whatever the last test did, the broker and the other sandbox are fine.
  const res = await run(broker.client, bystander, "bash", { command: "echo still here" });
  expect(res).toMatchObject({ isError: false, output: "still here" });
});

/** A small sandbox, so bombs hit their limits fast. */
function hostile(extra: Record<string, number> = {}): Promise<string> {
  return provision(broker.client, sessionId, { memoryBytes: 64 * MiB, diskBytes: 16 * MiB, maxProcesses: 64, ...extra });
}

describe("hostile code is contained", () => {
  it("a fork bomb hits the process limit and the sandbox survives it", async () => {
    const id = await hostile();
    const res = await run(broker.client, id, "bash", { command: ":(){ :|:& };:", timeout_ms: 5000 });
    expect(res.output).toMatch(/fork|Resource temporarily unavailable/);
    const after = await run(broker.client, id, "bash", { command: "echo alive; ps -e --no-headers | wc -l" });
    expect(after.isError).toBe(false);
    expect(after.output.split("\n")[0]).toBe("alive");
    expect(Number(after.output.split("\n")[1])).toBeLessThan(10);
  });

  it("a memory bomb is killed by the OOM killer, reported as out of memory; the sandbox survives", async () => {
    const id = await hostile();
    const res = await run(broker.client, id, "bash", { command: "perl -e '$x = q(a) x (1024*1024*1024); print length $x'" });
    expect(res.isError).toBe(true);
    expect(res.output).toContain("out of memory");
    expect((await run(broker.client, id, "bash", { command: "echo alive" })).output).toBe("alive");
  });

  it("an infinite loop is killed at the call's timeout; the sandbox survives", async () => {
    const id = await hostile();
    const started = Date.now();
    const res = await run(broker.client, id, "bash", { command: "while :; do :; done", timeout_ms: 1000 });
    // The loop never ends by itself: only the 1 s limit ends the call; 15 s is a busy machine's margin.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(res.isError).toBe(true);
    expect(res.output).toContain("timed out after 1000 ms");
    const timed = await run(broker.client, id, "bash", { command: "sleep 30 & sleep 30; echo never" }, { timeoutMs: 500 });
    expect(timed.output).toContain("timed out after 500 ms");
    const after = await run(broker.client, id, "bash", { command: "ps -e --no-headers -o comm | grep -c sleep || true" });
    expect(after.output).toBe("0");
  });

  it("100 MB of output is cut with a marker and never held whole by the broker", async () => {
    const id = await hostile();
    const before = process.memoryUsage().rss;
    const res = await run(broker.client, id, "bash", { command: "head -c 100000000 /dev/zero | tr '\\0' x; echo; echo the-end" });
    const grown = process.memoryUsage().rss - before;
    expect(res.truncated).toBe(true);
    expect(res.output).toMatch(/\[output truncated: \d+ of 100000009 bytes omitted here/);
    expect(res.output.endsWith("the-end")).toBe(true);
    expect(Buffer.byteLength(res.output)).toBeLessThan(64 * 1024 + 300);
    expect(grown).toBeLessThan(64 * MiB);
  });

  it("writes outside the workspace fail: the system is read-only", async () => {
    const id = await hostile();
    const res = await run(broker.client, id, "bash", {
      command: "for f in /usr/bin/evil /etc/passwd /evil /bin/sh; do (echo x > $f) 2>&1; done; touch /workspace/ok /tmp/ok && echo writable",
    });
    expect(res.output.match(/Read-only file system/g)?.length).toBe(4);
    expect(res.output).toContain("writable");
    const tool = await run(broker.client, id, "write", { file_path: "../../etc/shadow", content: "x" });
    expect(tool.isError).toBe(true);
    expect(tool.output).toContain("Read-only file system");
    const disk = await run(broker.client, id, "bash", { command: "head -c 32000000 /dev/zero > big; echo rc=$?" });
    expect(disk.output).toContain("No space left on device");
    // Nor is /dev a way round the disk limit: read-only but for its devices, and shared memory
    // bounded like /tmp.
    const dev = await run(broker.client, id, "bash", {
      command: "(echo x > /dev/evil) 2>&1; echo ok > /dev/null && echo devices; head -c 200000000 /dev/zero > /dev/shm/big; echo rc=$?",
    });
    expect(dev.output).toContain("Read-only file system");
    expect(dev.output).toContain("devices");
    expect(dev.output).toContain("No space left on device");
  });

  it("the broker's environment and host processes are invisible", async () => {
    const id = await hostile();
    const res = await run(broker.client, id, "bash", {
      command: "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; cat /proc/*/cmdline 2>/dev/null | tr '\\0' ' '; echo; ls /proc | grep -cE '^[0-9]+$'",
    });
    expect(res.output).not.toContain(CANARY);
    expect(res.output).not.toContain("MH_DATABASE_URL");
    expect(res.output).not.toMatch(/vitest|postgres:/);
    const pids = Number(res.output.trim().split("\n").at(-1));
    expect(pids).toBeLessThan(10);
    const host = await run(broker.client, id, "bash", { command: `test -e /proc/${process.pid}/cwd && readlink /proc/${process.pid}/cwd || echo invisible` });
    expect(host.output).not.toContain("/work");
  });

  it("there is no privilege to gain: no capabilities, no nested namespaces, not root on the host", async () => {
    const id = await hostile();
    const res = await run(broker.client, id, "bash", {
      command: "grep -E '^Cap(Prm|Eff|Bnd)' /proc/self/status; unshare -U true 2>&1 || echo no-userns; unshare -n true 2>&1 || echo no-netns",
    });
    expect(res.output).toMatch(/CapPrm:\s+0+\nCapEff:\s+0+\nCapBnd:\s+0+/);
    expect(res.output).toContain("no-userns");
    expect(res.output).toContain("no-netns");
    const status = await readFile(`/proc/${broker.handle.pidOf(id)}/status`, "utf8");
    // As root the broker gives each sandbox a host uid of its own, from MH_SANDBOX_UID_BASE (1.9e9) on.
    if (process.getuid?.() === 0) expect(Number(/^Uid:\s+(\d+)\s/m.exec(status)?.[1])).toBeGreaterThanOrEqual(1_900_000_000);
  });

  it("system calls a tool never needs are refused (seccomp): io_uring, keyrings, bpf, perf events", async () => {
    const id = await hostile();
    // Each raw call prints its result and errno: EPERM (1) from the filter; the kernel itself
    // would answer these arguments otherwise (EFAULT, EINVAL...).
    const calls = { io_uring_setup: "425, 1, 0", keyctl: "250, 0, 0", bpf: "321, 0, 0, 0", perf_event_open: "298, 0, 0, 0, 0, 0" };
    const script = Object.entries(calls)
      .map(([name, args]) => `$! = 0; my $${name} = syscall(${args}); print "${name} $${name} ", $! + 0, "\\n";`)
      .join(" ");
    const res = await run(broker.client, id, "bash", { command: `perl -e '${script}'` });
    expect(res.output.split("\n")).toEqual(Object.keys(calls).map((name) => `${name} -1 1`));
    // Ordinary work goes on.
    expect((await run(broker.client, id, "bash", { command: "echo ok | grep -c ok && git --version >/dev/null && echo git" })).output).toBe("1\ngit");
  });

  it("no other local user reaches a sandbox's run directory, where its credential sockets live", async () => {
    if (process.getuid?.() !== 0) return; // setpriv to another user needs root
    const id = await hostile();
    const bases = (await readdir(tmpdir())).filter((n) => n.startsWith("mhrun-")).map((n) => join(tmpdir(), n));
    const runDir = bases.map((b) => join(b, id)).find((d) => existsSync(d));
    expect(runDir).toBeDefined();
    const as = (uid: number, ...cmd: string[]) =>
      spawnSync("setpriv", [`--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", "--", ...cmd], { encoding: "utf8" });
    // Another user can neither list the sandboxes nor open one's directory...
    expect(as(1000, "ls", dirname(runDir!)).stderr).toContain("Permission denied");
    expect(as(1000, "ls", runDir!).stderr).toContain("Permission denied");
    // ...which the sandbox's own host user still reaches (bwrap binds it from there).
    const own = Number(/^Uid:\s+(\d+)\s/m.exec(await readFile(`/proc/${broker.handle.pidOf(id)}/status`, "utf8"))?.[1]);
    expect(as(own, "ls", runDir!).status).toBe(0);
    expect(as(65534, "ls", runDir!).stderr).toContain("Permission denied");
  });

  it("there is no network: connections fail, only loopback exists", async () => {
    const id = await hostile();
    const res = await run(broker.client, id, "bash", {
      command: "(exec 3<>/dev/tcp/127.0.0.1/5432) 2>&1; (exec 3<>/dev/tcp/1.1.1.1/80) 2>&1; tail -n +3 /proc/net/dev | cut -d: -f1",
    });
    expect(res.output).toMatch(/Connection refused|Network is unreachable/);
    expect(res.output).not.toContain("connected");
    expect(res.output.trim().split("\n").at(-1)?.trim()).toBe("lo");
  });

  it("a sandbox killed from outside is lost: the next call says so, and a new one works", async () => {
    const id = await hostile();
    const pid = broker.handle.pidOf(id);
    expect(pid).toBeGreaterThan(0);
    process.kill(pid!, "SIGKILL");
    const res = await run(broker.client, id, "bash", { command: "echo hi" });
    expect(res.isError).toBe(true);
    expect(res.output).toBe(`sandbox ${id} was lost: killed by signal SIGKILL`);
    const described = await eventually(async () => {
      const { sandbox } = await broker.client.describeSandbox({ sandboxId: id });
      return sandbox?.state === SandboxState.SANDBOX_STATE_LOST ? sandbox : undefined;
    }, "the sandbox to be recorded lost");
    expect(described.reason).toBe("killed by signal SIGKILL");
    const fresh = await hostile();
    expect((await run(broker.client, fresh, "bash", { command: "echo new" })).output).toBe("new");
  });
});
