/**
 * What a sandbox gets from a built layer: the layer bound read-only at LAYER_ROOT; when it holds
 * Debian packages, a /usr that is the host's with the packages' files overlaid (a read-only
 * overlayfs mounted once per layer on the host, under MH_LAYER_DIR/mounts, and reused by every
 * sandbox and by later broker processes), plus the packages' own /etc entries; and the variables
 * that put its programs and libraries on the tools' paths (steps.ts layerEnv). Nothing here runs
 * per sandbox but a lookup: a mount costs once per layer, never on the provision path again.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { MhError } from "@metaharness/errors";
import { SANDBOX_ENV } from "../inside/view.js";
import { LAYER_ROOT, layerEnv } from "./steps.js";
import type { LayerInfo } from "./store.js";

/** A layer as the launcher mounts it. */
export interface LayerMount {
  readonly id: string;
  /** Host path bound read-only at LAYER_ROOT. */
  readonly path: string;
  /** Host path bound read-only at /usr instead of the host's /usr (Debian packages overlaid). */
  readonly usr: string | undefined;
  /** [host path, sandbox path] of the Debian packages' /etc entries. */
  readonly etc: ReadonlyArray<readonly [string, string]>;
  /** Variables for the tools (they replace SANDBOX_ENV's of the same name). */
  readonly env: readonly string[];
}

/** /etc names the sandbox already has, which a package's own must not replace. */
const OWN_ETC = new Set(["passwd", "group", "hosts", "nsswitch.conf", "hostname", "ld.so.cache", "alternatives", "localtime", "ssl", "ca-certificates", "mime.types"]);

/** By layer path: one mount per layer, however many sandboxes ask for it at once. */
const mounted = new Map<string, Promise<LayerMount>>();

/** The mount of a built layer; overlays its Debian files on /usr the first time. */
export function layerMount(info: LayerInfo & { path: string }, mountPoint: string): Promise<LayerMount> {
  let mount = mounted.get(info.path);
  if (mount === undefined) {
    mount = makeMount(info, mountPoint);
    mounted.set(info.path, mount);
    // A mount that failed is tried again by the next sandbox.
    mount.catch(() => mounted.delete(info.path));
  }
  return mount;
}

async function makeMount(info: LayerInfo & { path: string }, mountPoint: string): Promise<LayerMount> {
  const basePath = (SANDBOX_ENV.find((kv) => kv.startsWith("PATH=")) ?? "PATH=/usr/bin:/bin").slice("PATH=".length);
  const aptUsr = join(info.path, "apt", "usr");
  let usr: string | undefined;
  const etc: Array<readonly [string, string]> = [];
  if (info.managers.includes("apt") && existsSync(aptUsr)) {
    await overlay(aptUsr, mountPoint);
    usr = mountPoint;
    const aptEtc = join(info.path, "apt", "etc");
    if (existsSync(aptEtc)) for (const name of readdirSync(aptEtc)) if (!OWN_ETC.has(name)) etc.push([join(aptEtc, name), `/etc/${name}`]);
  }
  return { id: info.id, path: info.path, usr, etc, env: layerEnv(info.managers, basePath) };
}

/** bwrap arguments that show `mount` in a sandbox (after /etc exists, before / turns read-only). */
export function layerBinds(mount: LayerMount): string[] {
  const args = ["--ro-bind", mount.path, LAYER_ROOT];
  for (const [host, dest] of mount.etc) args.push("--ro-bind", host, dest);
  return args;
}

/** Mounts `lower` over the host's /usr at `at`, read-only, unless it is mounted there already. */
export async function overlay(lower: string, at: string): Promise<void> {
  if (isMountPoint(at)) return;
  await mkdir(at, { recursive: true });
  const res = spawnSync("/usr/bin/mount", ["-t", "overlay", "overlay", "-o", `ro,lowerdir=${lower}:/usr`, at], { encoding: "utf8", timeout: 10_000 });
  if (res.status !== 0) {
    throw new MhError("FAILED_PRECONDITION", `could not overlay the layer's Debian packages on /usr: ${(res.stderr || res.error?.message || "").trim()}`);
  }
}

function isMountPoint(path: string): boolean {
  // /proc/self/mountinfo's fifth field is the mount point (spaces escaped as \040).
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .some((line) => line.split(" ")[4]?.replace(/\\040/g, " ") === path);
}

/** Undoes overlay(); a mount point that is not one is left alone. */
export function unmount(at: string): void {
  if (isMountPoint(at)) spawnSync("/usr/bin/umount", [at], { stdio: "ignore", timeout: 10_000 });
}
