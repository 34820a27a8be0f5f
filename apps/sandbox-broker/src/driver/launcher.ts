/**
 * Starts sandbox processes: one spawn per sandbox of a tiny shell that joins the sandbox's
 * cgroups (so not one process of it ever runs outside its limits), then execs prlimit (only for
 * limits no cgroup enforces) and bwrap, which execs the agent. When the broker is root, each
 * sandbox runs as an unprivileged host user of its own (sandbox-uids.ts; 65534 inside), not as
 * root mapped to 65534: dropped by the spawn itself where the cgroups allow an unprivileged join
 * (v1, with the group's cgroup.procs handed to that user), else by setpriv after the join (one
 * exec more, ~2 ms); its sockets let in that uid alone (auth/peer-credentials.ts). bwrap's
 * options, which name host paths (the run directory with the sandbox's sockets), reach it through
 * a descriptor (`--args`), never its command line, which any host process can read in /proc. At
 * start it probes what works on this machine and says so once, in a log line and in every
 * sandbox's `limits`.
 */
import { spawn, spawnSync, type ChildProcessByStdio, type StdioOptions } from "node:child_process";
import { existsSync } from "node:fs";
import { open, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import type { Logger } from "@metaharness/service-kit/logging";
import { MhError } from "@metaharness/errors";
import type { Limits } from "../resources.js";
import { PeerCredentials, type PeerGuard } from "../auth/peer-credentials.js";
import { SandboxRuntimeDir, bwrapArgs } from "./bwrap-args.js";
import { detectCgroups, type CgroupLayout, type SandboxCgroup } from "./cgroups.js";
import { SandboxUids, checkRange } from "./sandbox-uids.js";
import { seccompProgram } from "./seccomp.js";
import { layerBinds, type LayerMount } from "../layers/mount.js";

// $1: how many cgroup.procs files follow; then the files; then the command to exec.
const JOIN_AND_EXEC = `n=$1; shift
while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done
exec "$@"`;

const SHELL = "/bin/sh";
/** The fd bwrap reads the seccomp program from (the spawn's fourth stdio entry). */
const SECCOMP_FD = 3;
/** The fd bwrap reads its options from, NUL-separated (the fifth). */
const ARGS_FD = 4;
const SETPRIV = "/usr/bin/setpriv";
const STDERR_KEEP = 4096;

/** How the sandbox user is reached: by the spawn, by setpriv after the cgroup join, or not at all. */
type Drop = "spawn" | "setpriv" | "none";

export type SandboxChild = ChildProcessByStdio<Writable, Readable, Readable>;

export interface Launched {
  readonly child: SandboxChild;
  readonly cgroup: SandboxCgroup | undefined;
  /** The sandbox's run directory on the host (its /run/metaharness): where its sockets go. */
  readonly runDir: string;
  /** Who may connect to its sockets: its own host uid (undefined where it runs as the broker's). */
  readonly guard: PeerGuard | undefined;
  /** The last bytes bwrap wrote on stderr (why it could not start, usually). */
  stderr(): string;
  /** Once its process has exited: removes its cgroups and run directory, then frees its uid. */
  cleanup(): Promise<void>;
}

export interface LauncherOptions {
  readonly bwrapPath: string;
  readonly cgroupMode: "auto" | "v1" | "v2" | "none";
  readonly cgroupParent: string;
  readonly brokerId: string;
  readonly tmpBytes: number;
  /** MH_SANDBOX_UID_BASE and MH_SANDBOX_UID_COUNT. */
  readonly uids: { readonly base: number; readonly count: number };
  readonly logger: Logger;
}

export class Launcher {
  private constructor(
    private readonly opts: LauncherOptions,
    private readonly runtime: SandboxRuntimeDir,
    private readonly cgroups: CgroupLayout,
    private readonly drop: Drop,
    private readonly disableUserns: boolean,
    /** How limits are enforced here, for logs and Describe. */
    readonly limitsDescription: string,
    /** The seccomp program's file (driver/seccomp.ts), handed to each bwrap as fd 3; none on other architectures. */
    private readonly seccompFile: string | undefined,
    /** Where sandboxes run as users of their own (the broker is root): their uids, and who checks peers. */
    private readonly own: { readonly uids: SandboxUids; readonly peers: PeerCredentials } | undefined,
  ) {}

  static async create(opts: LauncherOptions): Promise<Launcher> {
    if (!existsSync(opts.bwrapPath)) {
      throw new MhError("FAILED_PRECONDITION", `bubblewrap (${opts.bwrapPath}) is not installed: run infra/sandbox/up.sh`);
    }
    const runtime = await SandboxRuntimeDir.create(opts.brokerId);
    try {
      const cgroups = await detectCgroups({
        mode: opts.cgroupMode,
        parent: opts.cgroupParent,
        brokerId: opts.brokerId,
        logger: opts.logger,
      });
      const stale = await cgroups.removeStale();
      if (stale > 0) opts.logger.info({ removed: stale }, "removed cgroups left by an earlier run");
      const disableUserns = spawnSync(opts.bwrapPath, ["--help"], { encoding: "utf8" }).stdout.includes("--disable-userns");
      if (!disableUserns) opts.logger.warn("this bwrap cannot forbid nested user namespaces (--disable-userns needs bwrap 0.8)");
      let uids: SandboxUids | undefined;
      let drop: Drop = "none";
      if (process.getuid?.() === 0) {
        await checkRange(opts.uids.base, opts.uids.count);
        uids = new SandboxUids(opts.uids.base, opts.uids.count);
        const probe = await uids.acquire();
        drop = await chooseDrop(opts.bwrapPath, runtime.path, cgroups, disableUserns, probe.uid).finally(() => probe.release());
      } else {
        await chooseDrop(opts.bwrapPath, runtime.path, cgroups, disableUserns, undefined);
      }
      const peers = uids !== undefined && drop !== "none" ? await PeerCredentials.start() : undefined;
      if (drop === "none" && process.getuid?.() === 0) {
        opts.logger.warn("unprivileged user namespaces are unavailable: sandbox processes run as host root (mapped to uid 65534 inside)");
      }
      const fallback = rlimitControllers(cgroups);
      if (fallback.length > 0) {
        opts.logger.warn({ fallback }, "cgroups cannot enforce every sandbox limit here: using prlimit for the rest (per process, weaker)");
      }
      const program = seccompProgram();
      let seccompFile: string | undefined;
      if (program === undefined) {
        opts.logger.warn({ arch: process.arch }, "no seccomp filter is described for this architecture: sandboxes run without one");
      } else {
        seccompFile = join(runtime.path, "seccomp.bpf");
        await writeFile(seccompFile, program, { mode: 0o600 });
      }
      const description = [
        cgroups.description === "none" ? "no cgroups" : cgroups.description,
        ...(fallback.length > 0 ? [`prlimit fallback: ${fallback.join(", ")}`] : []),
        drop === "none" || uids === undefined ? `host uid ${process.getuid?.() ?? "?"}` : uids.description,
      ].join("; ");
      return new Launcher(opts, runtime, cgroups, drop, disableUserns, description, seccompFile, peers === undefined || uids === undefined ? undefined : { uids, peers });
    } catch (err) {
      await runtime.remove();
      throw err;
    }
  }

  /** Spawns the sandbox `name`; the caller waits for the agent's hello. */
  async launch(name: string, limits: Limits, layer?: LayerMount): Promise<Launched> {
    const user = await this.own?.uids.acquire();
    const uid = user?.uid;
    let cgroup: SandboxCgroup | undefined;
    let runDir: string | undefined;
    const cleanup = async (): Promise<void> => {
      await cgroup?.destroy();
      if (runDir !== undefined) await rm(runDir, { recursive: true, force: true });
      await user?.release();
    };
    try {
      cgroup =
        this.cgroups.enforced.size === 0
          ? undefined
          : await this.cgroups.create(name, {
              // The tmpfs pages of /workspace and /tmp are charged to the group too.
              memoryBytes: limits.memoryBytes + limits.diskBytes + this.opts.tmpBytes,
              maxProcesses: limits.maxProcesses,
              cpuMillis: limits.cpuMillis,
              joinerUid: this.drop === "spawn" ? uid : undefined,
            });
      runDir = await this.runtime.runDir(name, uid);
      const child = await this.spawn(runDir, limits, cgroup, uid, layer);
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => {
        stderr = (stderr + chunk.toString("utf8")).slice(-STDERR_KEEP);
      });
      const guard = uid === undefined || this.own === undefined ? undefined : { uid, credentials: this.own.peers };
      return { child, cgroup, runDir, guard, stderr: () => stderr.trim(), cleanup };
    } catch (err) {
      await cleanup();
      throw err;
    }
  }

  private async spawn(
    runDir: string,
    limits: Limits,
    cgroup: SandboxCgroup | undefined,
    uid: number | undefined,
    layer: LayerMount | undefined,
  ): Promise<SandboxChild> {
    const { options, command: inside } = bwrapArgs({
      runtimeDir: this.runtime.path,
      workspaceBytes: limits.diskBytes,
      tmpBytes: this.opts.tmpBytes,
      disableUserns: this.disableUserns,
      runDir,
      ...(layer === undefined ? {} : { layer: { usr: layer.usr, binds: layerBinds(layer) } }),
      ...(rlimitControllers(this.cgroups).includes("pids") ? { maxProcesses: limits.maxProcesses } : {}),
    });
    const command = [
      ...this.prlimitArgs(limits),
      ...(this.drop === "setpriv" && uid !== undefined ? setprivArgs(uid) : []),
      this.opts.bwrapPath,
      ...(this.seccompFile === undefined ? [] : ["--seccomp", String(SECCOMP_FD)]),
      "--args",
      String(ARGS_FD),
      ...inside,
    ];
    const procs = cgroup?.procsFiles ?? [];
    // Opened by the broker for this spawn only; the sandbox's processes never see it (bwrap reads
    // it before running the sandbox and does not pass it on), nor the options' pipe.
    const seccompFd = this.seccompFile === undefined ? undefined : await open(this.seccompFile, "r");
    try {
      // Its stdin, stdout and stderr are pipes, then the filter's fd (if any) and the options' pipe.
      const stdio: StdioOptions = ["pipe", "pipe", "pipe", seccompFd?.fd ?? "ignore", "pipe"];
      const child = spawn(SHELL, ["-c", JOIN_AND_EXEC, "sh", String(procs.length), ...procs, ...command], {
        stdio,
        // bwrap's init (pid 1 in the sandbox) keeps the environment and cwd it was started with,
        // readable in /proc/1: give it nothing of the broker's.
        env: {},
        cwd: "/",
        ...(this.drop === "spawn" && uid !== undefined ? { uid, gid: uid } : {}),
      }) as SandboxChild;
      const optionsPipe = child.stdio[ARGS_FD] as Writable;
      optionsPipe.on("error", () => undefined); // bwrap died before reading: its exit says why
      optionsPipe.end(Buffer.from(`${options.join("\0")}\0`));
      return child;
    } finally {
      await seccompFd?.close();
    }
  }

  /** After every sandbox has ended: removes the runtime directory and this broker's cgroup directories. */
  async stop(): Promise<void> {
    this.own?.peers.close();
    await this.cgroups.removeBase();
    await this.runtime.remove();
  }

  private prlimitArgs(limits: Limits): string[] {
    const missing = rlimitControllers(this.cgroups);
    // RLIMIT_DATA bounds each process's heap and private mappings (not the group's total).
    // RLIMIT_NPROC is set inside the sandbox instead (bwrapArgs' maxProcesses, which says why).
    if (!missing.includes("memory")) return [];
    return ["/usr/bin/prlimit", `--data=${limits.memoryBytes}`, "--"];
  }
}

function setprivArgs(uid: number): string[] {
  return [SETPRIV, `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", "--"];
}

/** Controllers that only an rlimit can stand in for (cpu has none: it is then unlimited). */
function rlimitControllers(cgroups: CgroupLayout): string[] {
  return (["memory", "pids"] as const).filter((c) => !cgroups.enforced.has(c));
}

/**
 * The cheapest way to the sandbox user (`uid`, given when the broker is root) that works here;
 * "none" when not root or nothing works.
 */
async function chooseDrop(bwrapPath: string, runtimeDir: string, cgroups: CgroupLayout, disableUserns: boolean, uid: number | undefined): Promise<Drop> {
  const { options, command } = bwrapArgs({ runtimeDir, workspaceBytes: 1 << 20, tmpBytes: 1 << 20, command: ["/usr/bin/true"], disableUserns });
  const args = [...options, ...command];
  const ok = (file: string, argv: string[], asSandboxUser: boolean): Promise<boolean> =>
    new Promise((resolve) => {
      const child = spawn(file, argv, { stdio: "ignore", timeout: 10_000, ...(asSandboxUser && uid !== undefined ? { uid, gid: uid } : {}) });
      child.on("error", () => resolve(false));
      child.on("close", (code) => resolve(code === 0));
    });
  if (uid !== undefined) {
    if (cgroups.unprivilegedJoin && (await ok(bwrapPath, args, true))) return "spawn";
    if (existsSync(SETPRIV) && (await ok(SETPRIV, [...setprivArgs(uid).slice(1), bwrapPath, ...args], false))) return "setpriv";
  }
  if (!(await ok(bwrapPath, args, false))) {
    throw new MhError("FAILED_PRECONDITION", `bubblewrap (${bwrapPath}) cannot start a sandbox here: run infra/sandbox/up.sh`);
  }
  return "none";
}
