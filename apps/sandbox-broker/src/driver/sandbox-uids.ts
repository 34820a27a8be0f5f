/**
 * The host uids of sandboxes: each running sandbox has one of its own from the range
 * MH_SANDBOX_UID_BASE .. + MH_SANDBOX_UID_COUNT (used as its gid too; inside, every sandbox is
 * 65534), so that no process of one sandbox, and no host process of some service's uid (as 65534,
 * "nobody", was), can reach another sandbox's files or sockets.
 *
 * A uid is claimed by binding an abstract unix socket named after it: the kernel refuses a second
 * bind of the name while the first lives, and frees it when the process holding it dies, however
 * it dies. So brokers sharing a host (and its network namespace) never give out the same uid at
 * once, and a broker that crashed leaves no stale claim behind. A claimed uid is then checked to
 * run no process (the sandboxes of a broker that just died are killed with it, but may outlive it
 * by a moment) and skipped if it does. Uids are handed out round-robin from a random start, so one
 * just released is the last to be used again. A uid is released only after its sandbox's process
 * tree has exited (its pid namespace is empty by then) and its run directory and cgroups are gone.
 */
import { readFile, readdir } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { MhError } from "@metaharness/errors";

export interface SandboxUid {
  readonly uid: number;
  release(): Promise<void>;
}

export class SandboxUids {
  private cursor: number;

  constructor(
    readonly base: number,
    readonly count: number,
  ) {
    this.cursor = Math.floor(Math.random() * count);
  }

  get description(): string {
    return `host uids ${this.base}-${this.base + this.count - 1}, one per sandbox`;
  }

  async acquire(): Promise<SandboxUid> {
    for (let tried = 0; tried < this.count; tried++) {
      const uid = this.base + (this.cursor++ % this.count);
      const held = await claim(`\0metaharness-sandbox-uid-${uid}`);
      if (held === undefined) continue;
      if (await runsProcesses(uid)) {
        await close(held);
        continue;
      }
      let released: Promise<void> | undefined;
      return { uid, release: () => (released ??= close(held)) };
    }
    throw new MhError(
      "RESOURCE_EXHAUSTED",
      `every sandbox uid of this host is in use (MH_SANDBOX_UID_BASE=${this.base}, MH_SANDBOX_UID_COUNT=${this.count})`,
    );
  }
}

/** The listening claim, or undefined when another process holds the name. */
function claim(name: string): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    // Nobody has anything to say on a claim: a connection is hung up at once.
    const server = createServer((socket) => socket.destroy());
    server.once("error", (err: NodeJS.ErrnoException) => (err.code === "EADDRINUSE" ? resolve(undefined) : reject(err)));
    server.listen(name, () => {
      server.unref();
      resolve(server);
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Whether any process has `uid` as one of its user or group ids (real, effective, saved, fs). */
export async function runsProcesses(uid: number): Promise<boolean> {
  const ids = new RegExp(`^(Uid|Gid):.*\\s${uid}(\\s|$)`, "m");
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const status = await readFile(`/proc/${entry}/status`, "utf8").catch(() => "");
    if (ids.test(status)) return true;
  }
  return false;
}

/**
 * Refuses a range that overlaps a user or group the host knows (/etc/passwd, /etc/group): its
 * files and processes would be a sandbox's. Throws FAILED_PRECONDITION naming the setting.
 */
export async function checkRange(base: number, count: number): Promise<void> {
  if (base + count - 1 > 2_147_483_646) {
    throw new MhError("FAILED_PRECONDITION", `MH_SANDBOX_UID_BASE + MH_SANDBOX_UID_COUNT must stay below 2^31 - 1 (${base} + ${count})`);
  }
  for (const file of ["/etc/passwd", "/etc/group"]) {
    const text = await readFile(file, "utf8").catch(() => "");
    for (const line of text.split("\n")) {
      const [name, , id] = line.split(":");
      const n = Number(id);
      if (name !== undefined && name !== "" && Number.isInteger(n) && n >= base && n < base + count) {
        throw new MhError("FAILED_PRECONDITION", `MH_SANDBOX_UID_BASE/MH_SANDBOX_UID_COUNT: ${file} names ${name} with id ${n}, inside the range reserved for sandboxes`);
      }
    }
  }
}
