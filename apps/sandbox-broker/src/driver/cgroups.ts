/**
 * How this machine lets us limit a sandbox's memory, processes and CPU, found out at start rather
 * than assumed: for each controller, a cgroup v2 hierarchy that has it, else a writable cgroup v1
 * mount of it, else nothing (the driver then falls back to prlimit, see limits.ts). One group per
 * sandbox under `<mount>/<parent>/<broker id>/`, so a broker cleans up only what is its own.
 */
import { chown, mkdir, readFile, readdir, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { retry, retryPolicy } from "@metaharness/errors";
import type { Logger } from "@metaharness/service-kit/logging";

export const CONTROLLERS = ["memory", "pids", "cpu"] as const;
export type Controller = (typeof CONTROLLERS)[number];

/** cpu.cfs_period_us / the period of cpu.max: 100 ms, the kernel's default. */
const CPU_PERIOD_US = 100_000;
/** A group's removal is tried 41 times over about 1.5 s: its exited processes leave it once reaped. */
const RMDIR_POLICY = retryPolicy({ initialIntervalMs: 5, maxIntervalMs: 50, multiplier: 1.5, jitter: 0, maxAttempts: 41 });

export interface CgroupLimits {
  /** The whole group's memory: processes plus its tmpfs pages (see limits.ts). */
  readonly memoryBytes: number;
  readonly maxProcesses: number;
  readonly cpuMillis: number;
  /**
   * An unprivileged user that will write its own pid into the groups: their cgroup.procs files
   * are handed to it (v1 lets a process move itself where it may write cgroup.procs).
   */
  readonly joinerUid?: number | undefined;
}

interface Hierarchy {
  readonly version: 1 | 2;
  /** This broker's directory in the hierarchy. */
  readonly base: string;
  readonly controllers: readonly Controller[];
}

/** One sandbox's groups: join them before exec, ask them about OOM kills, remove them at the end. */
export interface SandboxCgroup {
  /** `cgroup.procs` files a process writes its pid into to join every group. */
  readonly procsFiles: readonly string[];
  /** How many processes the out-of-memory killer has killed in the group so far. */
  oomKills(): Promise<number>;
  /** Kills whatever is left in the groups and removes them. Idempotent. */
  destroy(): Promise<void>;
}

export interface CgroupLayout {
  /** Controllers a cgroup enforces; the others fall back to rlimits. */
  readonly enforced: ReadonlySet<Controller>;
  /** For logs and Describe: "cgroup v1: memory, pids, cpu", "none". */
  readonly description: string;
  /** Whether an unprivileged process may join the groups (`joinerUid`): v1 only (v2 wants rights on the source group too). */
  readonly unprivilegedJoin: boolean;
  create(name: string, limits: CgroupLimits): Promise<SandboxCgroup>;
  /** Removes empty groups left behind by an earlier run of this broker; returns how many. */
  removeStale(): Promise<number>;
  /** Removes this broker's (empty) directories, at shutdown. */
  removeBase(): Promise<void>;
}

interface Mount {
  readonly fstype: "cgroup" | "cgroup2";
  readonly path: string;
  readonly options: readonly string[];
}

async function cgroupMounts(): Promise<Mount[]> {
  const text = await readFile("/proc/self/mountinfo", "utf8").catch(() => "");
  const mounts: Mount[] = [];
  for (const line of text.split("\n")) {
    // <id> <parent> <maj:min> <root> <mount point> <options> [optional...] - <fstype> <source> <super options>
    const [left, right] = line.split(" - ");
    if (left === undefined || right === undefined) continue;
    const [fstype, , superOptions = ""] = right.split(" ");
    const path = left.split(" ")[4];
    if ((fstype === "cgroup" || fstype === "cgroup2") && path !== undefined) {
      mounts.push({ fstype, path, options: superOptions.split(",") });
    }
  }
  return mounts;
}

async function tryMkdir(dir: string): Promise<boolean> {
  return mkdir(dir, { recursive: true }).then(
    () => true,
    () => false,
  );
}

async function v2Hierarchy(mount: Mount, parent: string, brokerId: string, wanted: Controller[]): Promise<Hierarchy | undefined> {
  const available = (await readFile(join(mount.path, "cgroup.controllers"), "utf8").catch(() => "")).trim().split(/\s+/);
  const controllers = wanted.filter((c) => available.includes(c));
  if (controllers.length === 0) return undefined;
  const base = join(mount.path, parent, brokerId);
  if (!(await tryMkdir(base))) return undefined;
  // Each level down to ours must delegate the controllers to its children. This fails where a
  // level holds processes itself (the "no internal processes" rule), e.g. our own group inside a
  // container: then v2 is not usable for us and the next option is tried.
  const enable = controllers.map((c) => `+${c}`).join(" ");
  const levels = [mount.path, ...parentChain(mount.path, parent), base];
  for (const dir of new Set(levels)) {
    const ok = await writeFile(join(dir, "cgroup.subtree_control"), enable).then(
      () => true,
      () => false,
    );
    if (!ok) return undefined;
  }
  return { version: 2, base, controllers };
}

/** The directories from `<mount>/<first segment of parent>` to `<mount>/<parent>`. */
function parentChain(mount: string, parent: string): string[] {
  const parts = parent.split("/").filter((p) => p !== "");
  return parts.map((_, i) => join(mount, ...parts.slice(0, i + 1)));
}

async function v1Hierarchy(mount: Mount, parent: string, brokerId: string, controller: Controller): Promise<Hierarchy | undefined> {
  const base = join(mount.path, parent, brokerId);
  return (await tryMkdir(base)) ? { version: 1, base, controllers: [controller] } : undefined;
}

export async function detectCgroups(opts: {
  readonly mode: "auto" | "v1" | "v2" | "none";
  readonly parent: string;
  readonly brokerId: string;
  readonly logger: Logger;
}): Promise<CgroupLayout> {
  const hierarchies: Hierarchy[] = [];
  if (opts.mode !== "none") {
    const mounts = await cgroupMounts();
    let missing: Controller[] = [...CONTROLLERS];
    const unified = mounts.find((m) => m.fstype === "cgroup2");
    if (unified !== undefined && opts.mode !== "v1") {
      const h = await v2Hierarchy(unified, opts.parent, opts.brokerId, missing);
      if (h !== undefined) {
        hierarchies.push(h);
        missing = missing.filter((c) => !h.controllers.includes(c));
      }
    }
    if (opts.mode !== "v2") {
      for (const controller of missing) {
        const mount = mounts.find((m) => m.fstype === "cgroup" && m.options.includes(controller));
        const h = mount === undefined ? undefined : await v1Hierarchy(mount, opts.parent, opts.brokerId, controller);
        if (h !== undefined) hierarchies.push(h);
      }
    }
  }
  const layout = new Layout(hierarchies, opts.logger);
  opts.logger.info(
    { cgroups: layout.description, bases: hierarchies.map((h) => h.base) },
    layout.enforced.size === CONTROLLERS.length
      ? "sandbox limits enforced by cgroups"
      : "some sandbox limits are not enforceable by cgroups here: falling back to prlimit for them",
  );
  return layout;
}

class Layout implements CgroupLayout {
  readonly enforced: ReadonlySet<Controller>;
  readonly description: string;
  readonly unprivilegedJoin: boolean;

  constructor(
    private readonly hierarchies: readonly Hierarchy[],
    private readonly logger: Logger,
  ) {
    this.enforced = new Set(hierarchies.flatMap((h) => h.controllers));
    const parts = [1, 2].flatMap((v) => {
      const cs = hierarchies.filter((h) => h.version === v).flatMap((h) => h.controllers);
      return cs.length === 0 ? [] : [`cgroup v${v}: ${cs.join(", ")}`];
    });
    this.description = parts.length === 0 ? "none" : parts.join("; ");
    this.unprivilegedJoin = hierarchies.every((h) => h.version === 1);
  }

  async create(name: string, limits: CgroupLimits): Promise<SandboxCgroup> {
    const dirs: Array<{ h: Hierarchy; dir: string }> = [];
    const group = new Group(dirs, this.logger);
    try {
      for (const h of this.hierarchies) {
        const dir = join(h.base, name);
        await mkdir(dir);
        dirs.push({ h, dir });
        for (const c of h.controllers) await writeLimit(h.version, dir, c, limits);
        if (limits.joinerUid !== undefined) await chown(join(dir, "cgroup.procs"), limits.joinerUid, -1);
      }
      return group;
    } catch (err) {
      await group.destroy();
      throw err;
    }
  }

  async removeBase(): Promise<void> {
    for (const h of this.hierarchies) await rmdir(h.base).catch(() => undefined);
  }

  async removeStale(): Promise<number> {
    let removed = 0;
    for (const h of this.hierarchies) {
      const entries = await readdir(h.base, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        if (!e.isDirectory() || !e.name.startsWith("sbx_")) continue;
        // rmdir refuses a group that still has processes, which is exactly the check we want.
        if (await rmdir(join(h.base, e.name)).then(() => true, () => false)) removed++;
      }
    }
    return removed;
  }
}

async function writeLimit(version: 1 | 2, dir: string, c: Controller, limits: CgroupLimits): Promise<void> {
  const quota = Math.max(1000, Math.round((limits.cpuMillis * CPU_PERIOD_US) / 1000));
  if (version === 1) {
    if (c === "memory") {
      await writeFile(join(dir, "memory.limit_in_bytes"), String(limits.memoryBytes));
      // Memory and swap together under the same limit, as memory.swap.max 0 does on v2: else a
      // sandbox over its limit swaps (host swap without bound) instead of being OOM-killed. The
      // file exists only where the kernel accounts swap.
      await writeFile(join(dir, "memory.memsw.limit_in_bytes"), String(limits.memoryBytes)).catch(() => undefined);
    }
    if (c === "pids") await writeFile(join(dir, "pids.max"), String(limits.maxProcesses));
    if (c === "cpu") {
      await writeFile(join(dir, "cpu.cfs_period_us"), String(CPU_PERIOD_US));
      await writeFile(join(dir, "cpu.cfs_quota_us"), String(quota));
    }
    return;
  }
  if (c === "memory") {
    await writeFile(join(dir, "memory.max"), String(limits.memoryBytes));
    await writeFile(join(dir, "memory.swap.max"), "0").catch(() => undefined);
  }
  if (c === "pids") await writeFile(join(dir, "pids.max"), String(limits.maxProcesses));
  if (c === "cpu") await writeFile(join(dir, "cpu.max"), `${quota} ${CPU_PERIOD_US}`);
}

class Group implements SandboxCgroup {
  private destroying: Promise<void> | undefined;

  constructor(
    private readonly dirs: ReadonlyArray<{ h: Hierarchy; dir: string }>,
    private readonly logger: Logger,
  ) {}

  get procsFiles(): string[] {
    return this.dirs.map((d) => join(d.dir, "cgroup.procs"));
  }

  async oomKills(): Promise<number> {
    const mem = this.dirs.find((d) => d.h.controllers.includes("memory"));
    if (mem === undefined) return 0;
    const file = mem.h.version === 1 ? "memory.oom_control" : "memory.events";
    const text = await readFile(join(mem.dir, file), "utf8").catch(() => "");
    const match = /^oom_kill (\d+)$/m.exec(text);
    return match ? Number(match[1]) : 0;
  }

  destroy(): Promise<void> {
    this.destroying ??= this.removeAll();
    return this.destroying;
  }

  private async removeAll(): Promise<void> {
    for (const { h, dir } of this.dirs) {
      if (h.version === 2) await writeFile(join(dir, "cgroup.kill"), "1").catch(() => undefined);
      // Exited processes leave the group once reaped, which may take a moment: retry briefly.
      const removed = await retry(
        RMDIR_POLICY,
        async () => {
          await killAll(dir);
          await rmdir(dir).catch((err: NodeJS.ErrnoException) => {
            if (err.code !== "ENOENT") throw err;
          });
        },
        { isRetryable: () => true },
      ).then(
        () => true,
        () => false,
      );
      if (!removed) this.logger.warn({ cgroup: dir }, "could not remove a sandbox's cgroup; the next start removes it");
    }
  }
}

async function killAll(dir: string): Promise<void> {
  const text = await readFile(join(dir, "cgroup.procs"), "utf8").catch(() => "");
  for (const pid of text.split("\n").filter((l) => l !== "")) {
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      // gone already
    }
  }
}
