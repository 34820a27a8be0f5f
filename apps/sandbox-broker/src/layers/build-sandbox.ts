/**
 * The sandbox one build step runs in: bubblewrap like a tool sandbox (no capabilities, its own
 * pids, the sandbox user, a cleared environment), but with the host's network, since the step
 * fetches from its registry, and with nothing to steal: no service token, no credential proxy
 * socket, only the /etc entries name resolution, TLS and apt need. It may write to the layer's
 * staging tree (at LAYER_ROOT) and its scratch directory, nowhere else. The step is killed
 * (its whole pid namespace) when its time runs out or when the layer grows past its size limit,
 * checked every second while it runs.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { SANDBOX_GID, SANDBOX_UID, isolationArgs } from "../inside/view.js";
import { LAYER_ROOT, SCRATCH, type Step } from "./steps.js";

/** Host /etc entries a build needs, read-only: DNS, TLS roots, apt's sources and keys. */
const BUILD_ETC = [
  "resolv.conf",
  "hosts",
  "nsswitch.conf",
  "gai.conf",
  "host.conf",
  "ssl",
  "ca-certificates",
  "ca-certificates.conf",
  "apt",
  "dpkg",
  "debian_version",
  "alternatives",
  "ld.so.cache",
  "localtime",
  "mime.types",
];
/** What apt's dependency resolution reads: the host's installed set and its package lists. */
const BUILD_VAR = ["/var/lib/dpkg", "/var/lib/apt/lists"];
const OUTPUT_KEEP = 16 * 1024;
const SIZE_CHECK_MS = 1000;

export interface StepLimits {
  readonly bwrapPath: string;
  readonly timeoutMs: number;
  readonly maxBytes: number;
  /** Written once: our passwd and group, so tools that look up the user find one. */
  readonly etcDir: string;
  /** The /usr the step sees: the host's, or with the layer's Debian packages overlaid (after apt). */
  readonly usr?: string;
}

export type StepOutcome =
  | { readonly ok: true; readonly output: string }
  | { readonly ok: false; readonly why: string; readonly output: string };

/** Runs `step` with the layer tree `layer` and scratch `scratch` (host paths) bound in. */
export function runStep(step: Step, layer: string, scratch: string, limits: StepLimits, signal: AbortSignal): Promise<StepOutcome> {
  const args = buildArgs(step, layer, scratch, limits.etcDir, limits.usr ?? "/usr");
  const root = process.getuid?.() === 0;
  const child = spawn(limits.bwrapPath, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: {},
    cwd: "/",
    ...(root ? { uid: SANDBOX_UID, gid: SANDBOX_GID } : {}),
  });
  let output = "";
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString("utf8")).slice(-OUTPUT_KEEP);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  return new Promise((resolve) => {
    let killedFor: string | undefined;
    const kill = (why: string): void => {
      killedFor ??= why;
      child.kill("SIGKILL");
    };
    const timer = setTimeout(() => kill(`killed: the build's time limit (${duration(limits.timeoutMs)}) ran out while ${step.manager} ran`), limits.timeoutMs);
    const sizer = setInterval(() => {
      void treeBytes(layer).then((bytes) => {
        if (bytes > limits.maxBytes) kill(`killed: the layer grew past its size limit (${bytes} bytes > ${limits.maxBytes}) while ${step.manager} ran`);
      });
    }, SIZE_CHECK_MS);
    const onAbort = (): void => kill("the build was cancelled (the broker is shutting down)");
    signal.addEventListener("abort", onAbort, { once: true });
    child.once("error", (err) => kill(`could not start: ${err.message}`));
    child.once("close", (code, sig) => {
      clearTimeout(timer);
      clearInterval(sizer);
      signal.removeEventListener("abort", onAbort);
      const out = output.trim();
      if (killedFor !== undefined) resolve({ ok: false, why: killedFor, output: out });
      else if (code === 0) resolve({ ok: true, output: out });
      else resolve({ ok: false, why: `exited with ${code === null ? `signal ${sig ?? "?"}` : `code ${code}`}`, output: out });
    });
  });
}

function buildArgs(step: Step, layer: string, scratch: string, etcDir: string, usr: string): string[] {
  // The host's network (a build fetches from its registry), nothing else of the host's.
  const args = [...isolationArgs(), "--share-net", "--ro-bind", usr, "/usr"];
  for (const dir of ["bin", "lib", "lib64", "sbin"]) if (existsSync(`/${dir}`)) args.push("--symlink", `usr/${dir}`, `/${dir}`);
  args.push("--dir", "/etc", "--ro-bind", join(etcDir, "passwd"), "/etc/passwd", "--ro-bind", join(etcDir, "group"), "/etc/group");
  for (const name of BUILD_ETC) if (existsSync(`/etc/${name}`)) args.push("--ro-bind", `/etc/${name}`, `/etc/${name}`);
  if (existsSync("/etc/os-release")) args.push("--symlink", "../usr/lib/os-release", "/etc/os-release");
  for (const dir of BUILD_VAR) if (existsSync(dir)) args.push("--ro-bind", dir, dir);
  args.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", layer, LAYER_ROOT, "--bind", scratch, SCRATCH, "--chdir", SCRATCH);
  const env: Record<string, string> = {
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    HOME: `${SCRATCH}/home`,
    USER: "sandbox",
    LANG: "C.UTF-8",
    LC_ALL: "C.UTF-8",
    TMPDIR: `${SCRATCH}/tmp`,
    ...step.env,
  };
  for (const [k, v] of Object.entries(env)) args.push("--setenv", k, v);
  // HOME and TMPDIR exist before the step runs; on a disk, not in RAM.
  return [...args, "/bin/sh", "-c", `mkdir -p "$HOME" "$TMPDIR" && exec "$@"`, "step", ...step.argv];
}

/** Bytes of the files under `dir` (not following links). */
export async function treeBytes(dir: string): Promise<number> {
  let total = 0;
  const walk = async (d: string): Promise<void> => {
    const entries = await readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else total += (await lstat(p).catch(() => undefined))?.size ?? 0;
    }
  };
  await walk(dir);
  return total;
}

function duration(ms: number): string {
  return ms < 10_000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
}
