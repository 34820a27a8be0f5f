/**
 * The bubblewrap command line of one sandbox, and the few host files it shows. What a sandbox
 * sees: a read-only /usr (with the /bin, /lib, /lib64, /sbin links), a minimal read-only /etc of
 * our own making (no host users, no host secrets), fresh /proc and /dev, and two size-limited
 * tmpfs mounts, /tmp and /workspace. What it does not have: network (its own empty namespace),
 * the broker's environment, any capability, the host's pids, a way back to the host's session.
 *
 * Why the workspace is a tmpfs: its size= is a hard disk limit the kernel enforces (ENOSPC), it
 * costs nothing to create or throw away, and no host path of it exists for a planted symlink to
 * exploit or for a crashed broker to leak. Its pages are charged to the sandbox's memory cgroup,
 * which is why the group's memory limit is memory + disk + tmp (see limits.ts).
 */
import { createHash } from "node:crypto";
import { existsSync, lstatSync, readlinkSync } from "node:fs";
import { chmod, chown, copyFile, lstat, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EGRESS_RELAY_IN_SANDBOX, RUN_DIR_IN_SANDBOX, SANDBOX_ENV, SANDBOX_GID, SANDBOX_UID, WORKSPACE, isolationArgs } from "../inside/view.js";

const AGENT_IN_SANDBOX = "/opt/metaharness/sandbox-agent.pl";
/** util-linux's prlimit, from the host's /usr (bound read-only into every sandbox). */
const PRLIMIT = "/usr/bin/prlimit";
const AGENT_SOURCE = new URL("../../agent/sandbox-agent.pl", import.meta.url);
/** git's remote helper for "mh::<url>" remotes (see agent/git-remote-mh), on the sandbox's PATH. */
const GIT_HELPER_IN_SANDBOX = "/opt/metaharness/bin/git-remote-mh";
const GIT_HELPER_SOURCE = new URL("../../agent/git-remote-mh", import.meta.url);
const EGRESS_RELAY_SOURCE = new URL("../../agent/mh-egress-relay", import.meta.url);

const ETC_FILES: Readonly<Record<string, string>> = {
  passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:${SANDBOX_UID}:${SANDBOX_GID}:sandbox:${WORKSPACE}:/bin/bash\n`,
  group: `root:x:0:\nsandbox:x:${SANDBOX_GID}:\n`,
  hosts: "127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost\n",
  "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
  hostname: "sandbox\n",
};

/** Host /etc entries a shell, git and TLS need, shown read-only when present. */
const HOST_ETC = ["ld.so.cache", "alternatives", "localtime", "ssl", "ca-certificates", "mime.types"];

/**
 * A private directory holding what every sandbox binds read-only: our /etc files and a copy of
 * the agent. Readable by the sandbox user (bwrap may run as that user and must reach the sources).
 * One per broker process; those a crashed process of the same broker id left are removed.
 */
export class SandboxRuntimeDir {
  private constructor(
    readonly path: string,
    /** Holds one run directory per sandbox; short, because unix socket paths are (108 bytes). */
    readonly runBase: string,
  ) {}

  static async create(brokerId: string): Promise<SandboxRuntimeDir> {
    const prefix = `mh-sandbox-broker-${brokerId}-`;
    const runPrefix = `mhrun-${createHash("sha256").update(brokerId).digest("hex").slice(0, 8)}-`;
    await removeLeftovers(prefix);
    await removeLeftovers(runPrefix);
    const path = await mkdtemp(join(tmpdir(), prefix));
    await chmod(path, 0o755);
    for (const [name, text] of Object.entries(ETC_FILES)) await writeFile(join(path, name), text, { mode: 0o644 });
    await copyFile(AGENT_SOURCE, join(path, "sandbox-agent.pl"));
    await chmod(join(path, "sandbox-agent.pl"), 0o644);
    for (const [source, name] of [[GIT_HELPER_SOURCE, "git-remote-mh"], [EGRESS_RELAY_SOURCE, "mh-egress-relay"]] as const) {
      await copyFile(source, join(path, name));
      await chmod(join(path, name), 0o755);
    }
    const runBase = await mkdtemp(join(tmpdir(), runPrefix));
    // Passable, not listable: the sandboxes' names are nobody else's business.
    await chmod(runBase, 0o711);
    return new SandboxRuntimeDir(path, runBase);
  }

  /**
   * A fresh, empty run directory for sandbox `name` (the sandbox sees it read-only), open to its
   * host user alone: the sockets in it carry the session's credentials out (git, egress), so no
   * other local user, another sandbox's included, may reach them. `owner` is the sandbox's host
   * uid, its gid too (undefined: the broker's own).
   */
  async runDir(name: string, owner: number | undefined): Promise<string> {
    const dir = join(this.runBase, name);
    await mkdir(dir, { mode: 0o700 });
    await chmod(dir, 0o700);
    if (owner !== undefined) await chown(dir, owner, owner);
    return dir;
  }

  async remove(): Promise<void> {
    await rm(this.path, { recursive: true, force: true });
    await rm(this.runBase, { recursive: true, force: true });
  }
}

/** Our own directories named `prefix*` in the temp dir (never a link, never another user's). */
async function removeLeftovers(prefix: string): Promise<void> {
  const names = (await readdir(tmpdir())).filter((n) => n.startsWith(prefix));
  for (const name of names) {
    const path = join(tmpdir(), name);
    const st = await lstat(path).catch(() => undefined);
    if (st?.isDirectory() === true && st.uid === process.getuid?.()) await rm(path, { recursive: true, force: true });
  }
}

export interface BwrapSpec {
  readonly runtimeDir: string;
  readonly workspaceBytes: number;
  readonly tmpBytes: number;
  /** What runs inside; the agent by default (a probe runs `true`). */
  readonly command?: readonly string[];
  /** bwrap >= 0.8: forbid nested user namespaces, the usual first step of a kernel exploit. */
  readonly disableUserns?: boolean;
  /** The sandbox's run directory on the host, shown read-only at /run/metaharness. */
  readonly runDir?: string;
  /**
   * RLIMIT_NPROC for everything inside, where no pids cgroup bounds it. Set inside the sandbox's
   * own user namespace (by prlimit, as the command's first step), since Linux 5.14 it counts the
   * processes of that namespace alone; set on the way in, it counted the host uid's processes in
   * every sandbox together, so one sandbox at its limit stopped forks in all the others.
   */
  readonly maxProcesses?: number;
  /** An environment's package layer (layers/mount.ts): its /usr, its binds. */
  readonly layer?: { readonly usr: string | undefined; readonly binds: readonly string[] };
}

/**
 * What bwrap is told: its options (isolation, filesystem; host paths among them, so the launcher
 * hands them over through a descriptor, `--args`, never on a command line that any host process
 * may read in /proc), then the command, the agent as the sandbox's one program.
 */
export function bwrapArgs(spec: BwrapSpec): { options: string[]; command: string[] } {
  const args = [
    ...isolationArgs(),
    ...(spec.disableUserns === true ? ["--unshare-user", "--disable-userns"] : []),
    "--hostname",
    "sandbox",
    "--ro-bind",
    spec.layer?.usr ?? "/usr",
    "/usr",
    ...links(),
    "--dir",
    "/etc",
  ];
  for (const name of Object.keys(ETC_FILES)) args.push("--ro-bind", join(spec.runtimeDir, name), `/etc/${name}`);
  for (const name of HOST_ETC) if (existsSync(`/etc/${name}`)) args.push("--ro-bind", `/etc/${name}`, `/etc/${name}`);
  args.push(
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    // --dev's tmpfs is the sandbox's to write and unbounded (half the host's RAM): shared memory
    // gets its own tmpfs the size of /tmp, and the rest of /dev is read-only (device nodes such
    // as /dev/null still take writes).
    "--size",
    String(spec.tmpBytes),
    "--perms",
    "1777",
    "--tmpfs",
    "/dev/shm",
    "--remount-ro",
    "/dev",
    "--size",
    String(spec.tmpBytes),
    "--perms",
    "1777",
    "--tmpfs",
    "/tmp",
    "--size",
    String(spec.workspaceBytes),
    "--perms",
    "0755",
    "--tmpfs",
    WORKSPACE,
    "--ro-bind",
    join(spec.runtimeDir, "sandbox-agent.pl"),
    AGENT_IN_SANDBOX,
    "--ro-bind",
    join(spec.runtimeDir, "git-remote-mh"),
    GIT_HELPER_IN_SANDBOX,
    "--ro-bind",
    join(spec.runtimeDir, "mh-egress-relay"),
    EGRESS_RELAY_IN_SANDBOX,
    // A socket in a read-only mount still accepts connections: the sandbox can reach the broker's
    // sockets for it, and cannot create or replace anything there.
    ...(spec.runDir === undefined ? [] : ["--ro-bind", spec.runDir, RUN_DIR_IN_SANDBOX]),
    ...(spec.layer?.binds ?? []),
    // Everything mounted so far stays as it is, but / itself (and so /etc) turns read-only:
    // only /workspace and /tmp can be written.
    "--remount-ro",
    "/",
    "--chdir",
    WORKSPACE,
  );
  for (const kv of SANDBOX_ENV) {
    const eq = kv.indexOf("=");
    args.push("--setenv", kv.slice(0, eq), kv.slice(eq + 1));
  }
  const command = spec.maxProcesses === undefined ? [] : [PRLIMIT, `--nproc=${spec.maxProcesses}`, "--"];
  command.push(...(spec.command ?? ["/usr/bin/perl", AGENT_IN_SANDBOX]));
  return { options: args, command };
}

/** /bin, /lib, /lib64 and /sbin as the host has them: merged-/usr links, or read-only binds. */
function links(): string[] {
  const out: string[] = [];
  for (const dir of ["bin", "lib", "lib64", "sbin"]) {
    const host = `/${dir}`;
    if (!existsSync(host)) continue;
    if (lstatSync(host).isSymbolicLink()) out.push("--symlink", readlinkSync(host), host);
    else out.push("--ro-bind", host, host);
  }
  return out;
}
