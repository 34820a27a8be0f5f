/**
 * Reads a sandbox's whole filesystem from the host, the way it looks from inside (through
 * /proc/<pid>/root of its init, which lives in the sandbox's mount namespace): every regular file
 * except the read-only host trees (/usr, and the kernel's /proc, /sys, /dev). The sandbox cannot
 * write to the skipped trees, so a secret it was handed could not be hiding there.
 */
import { readFile, readdir, readlink } from "node:fs/promises";
import { join } from "node:path";

const SKIPPED = new Set(["proc", "sys", "dev", "usr"]);
const MAX_FILE_BYTES = 64 * 1024 * 1024;

export interface SandboxFile {
  readonly path: string;
  readonly content: Buffer;
}

/** The pid of the sandbox's init (first descendant of `hostPid` in another mount namespace). */
export async function sandboxInit(hostPid: number): Promise<number> {
  const ours = await readlink("/proc/self/ns/mnt");
  const queue = [hostPid];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    const ns = await readlink(`/proc/${pid}/ns/mnt`).catch(() => "");
    if (ns !== "" && ns !== ours) return pid;
    const children = await readFile(`/proc/${pid}/task/${pid}/children`, "utf8").catch(() => "");
    queue.push(...children.split(" ").filter((s) => s.trim() !== "").map(Number));
  }
  throw new Error(`no process of sandbox ${hostPid} lives in its own mount namespace`);
}

export async function sandboxFiles(hostPid: number): Promise<SandboxFile[]> {
  const root = `/proc/${await sandboxInit(hostPid)}/root`;
  const out: SandboxFile[] = [];
  const walk = async (dir: string, rel: string): Promise<void> => {
    for (const entry of await readdir(join(root, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (rel === "" && SKIPPED.has(entry.name)) continue;
      if (entry.isDirectory()) await walk(path, path);
      else if (entry.isFile()) {
        const content = await readFile(join(root, path)).catch(() => Buffer.alloc(0));
        out.push({ path, content: content.length > MAX_FILE_BYTES ? content.subarray(0, MAX_FILE_BYTES) : content });
      }
    }
  };
  await walk("/", "");
  return out;
}
