/**
 * Reads and writes a running bubblewrap sandbox's /workspace from the host, for its snapshots. The
 * workspace is a tmpfs inside the sandbox's mount namespace, with no host path; the broker enters
 * that namespace and user namespace with nsenter and runs agent/workspace-files.pl there as the
 * sandbox's own user, so a symlink planted in the workspace resolves inside the sandbox and a
 * restore writes nothing the sandbox could not. The helper's wire format is its header's.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { readFile, readlink } from "node:fs/promises";
import type { Readable } from "node:stream";
import { MhError } from "@metaharness/errors";

const HELPER = readFileSync(new URL("../../agent/workspace-files.pl", import.meta.url), "utf8");
const NSENTER = "/usr/bin/nsenter";
const PERL = "/usr/bin/perl";

/** One entry of a scan, as the helper reports it. */
export type ScanEntry =
  | { readonly type: "d"; readonly mode: string; readonly path: string }
  | { readonly type: "l"; readonly path: string; readonly target: string }
  | { readonly type: "f"; readonly mode: string; readonly path: string; readonly key: string }
  | { readonly type: "F"; readonly mode: string; readonly path: string; readonly key: string; readonly pieces: AsyncIterable<Buffer> };

/** A process inside the sandbox's namespaces: the helper is run next to it. */
export interface SandboxProcess {
  readonly hostPid: number;
}

/**
 * The host pid of a process inside the sandbox: bwrap (the spawned process, after its execs) has
 * one child, bwrap's init in the sandbox, whose child is the agent.
 */
export async function sandboxProcess(bwrapPid: number): Promise<SandboxProcess> {
  let pid = bwrapPid;
  for (let depth = 0; depth < 2; depth++) {
    const children = (await readFile(`/proc/${pid}/task/${pid}/children`, "utf8").catch(() => "")).trim().split(/\s+/);
    const next = Number(children[0]);
    if (!Number.isInteger(next) || next <= 0) throw new MhError("UNAVAILABLE", `the sandbox's process ${pid} has no child: is it still running?`);
    pid = next;
  }
  return { hostPid: pid };
}

/** nsenter's arguments: the user namespace only where the sandbox has one of its own. */
async function enterArgs(target: SandboxProcess): Promise<string[]> {
  const pid = target.hostPid;
  const [theirs, ours] = await Promise.all([readlink(`/proc/${pid}/ns/user`), readlink("/proc/self/ns/user")]);
  const own = theirs !== ours;
  const status = own ? "" : await readFile(`/proc/${pid}/status`, "utf8");
  const uid = own ? "65534" : (/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? "65534");
  const gid = own ? "65534" : (/^Gid:\s+(\d+)/m.exec(status)?.[1] ?? "65534");
  return ["-t", String(pid), ...(own ? ["-U"] : []), "-m", "--root", "--wd", "-S", uid, "-G", gid, "--", PERL, "-e", HELPER];
}

/** A running helper: its output read field by field, its exit awaited. */
export class HelperRun {
  private readonly reader: FieldReader;
  private readonly exited: Promise<void>;
  private stderr = "";

  private constructor(private readonly child: ReturnType<typeof spawn>) {
    const stdout = child.stdout as Readable;
    this.reader = new FieldReader(stdout);
    child.stderr?.on("data", (b: Buffer) => {
      if (this.stderr.length < 2048) this.stderr += b.toString("utf8");
    });
    this.exited = new Promise((resolve, reject) => {
      child.once("error", reject);
      child.once("close", (code, signal) => {
        if (code === 0) resolve();
        else reject(new MhError("INTERNAL", `the workspace helper failed (${signal ?? `exit ${code}`}): ${this.stderr.trim() || "no message"}`));
      });
    });
    this.exited.catch(() => undefined);
    child.stdin?.on("error", () => undefined);
  }

  static async start(target: SandboxProcess, mode: "scan" | "restore" | "clear"): Promise<HelperRun> {
    const child = spawn(NSENTER, [...(await enterArgs(target)), mode], { stdio: ["pipe", "pipe", "pipe"] });
    return new HelperRun(child);
  }

  write(bytes: Buffer): Promise<void> {
    const stdin = this.child.stdin;
    if (stdin === null) return Promise.resolve();
    return new Promise((resolve, reject) => {
      if (stdin.write(bytes)) resolve();
      else {
        const onDrain = (): void => {
          stdin.off("close", onClose);
          resolve();
        };
        const onClose = (): void => {
          stdin.off("drain", onDrain);
          reject(new MhError("INTERNAL", `the workspace helper stopped reading: ${this.stderr.trim() || "no message"}`));
        };
        stdin.once("drain", onDrain);
        stdin.once("close", onClose);
      }
    });
  }

  endInput(): void {
    this.child.stdin?.end();
  }

  field(): Promise<Buffer> {
    return this.reader.field().catch(async (err: unknown) => {
      // The helper's own message says more than a short read does.
      await this.exited;
      throw err;
    });
  }

  async text(): Promise<string> {
    return (await this.field()).toString("utf8");
  }

  /** A file's content pieces, up to the zero length that ends them. */
  async *pieces(): AsyncIterable<Buffer> {
    for (;;) {
      const piece = await this.field();
      if (piece.length === 0) return;
      yield piece;
    }
  }

  /** Waits for a clean exit; rejects with the helper's message otherwise. */
  done(): Promise<void> {
    return this.exited;
  }

  kill(): void {
    this.child.kill("SIGKILL");
  }
}

/** Encodes fields as the helper reads them. */
export function fields(...values: readonly (string | Buffer)[]): Buffer {
  const parts: Buffer[] = [];
  for (const v of values) {
    const body = typeof v === "string" ? Buffer.from(v, "utf8") : v;
    const len = Buffer.alloc(4);
    len.writeUInt32BE(body.length);
    parts.push(len, body);
  }
  return Buffer.concat(parts);
}

/** Scans the workspace; `known` maps path to the key of the previous scan (those files come without content). */
export async function* scanWorkspace(target: SandboxProcess, known: ReadonlyMap<string, string>): AsyncIterable<ScanEntry> {
  const run = await HelperRun.start(target, "scan");
  try {
    const input: string[] = [];
    for (const [path, key] of known) input.push(path, key);
    await run.write(Buffer.from(input.length === 0 ? "" : `${input.join("\0")}\0`, "utf8"));
    run.endInput();
    for (;;) {
      const type = await run.text();
      if (type === "Z") break;
      if (type === "d") yield { type, mode: await run.text(), path: await run.text() };
      else if (type === "l") yield { type, path: await run.text(), target: await run.text() };
      else if (type === "f") yield { type, mode: await run.text(), path: await run.text(), key: await run.text() };
      else if (type === "F") {
        const entry = { type, mode: await run.text(), path: await run.text(), key: await run.text(), pieces: run.pieces() } as const;
        yield entry;
      } else throw new MhError("INTERNAL", `the workspace helper sent a record of unknown type "${type}"`);
    }
    await run.done();
  } finally {
    run.kill();
  }
}

/** Empties the workspace (a restore that failed half-way, before another is tried). */
export async function clearWorkspace(target: SandboxProcess): Promise<void> {
  const run = await HelperRun.start(target, "clear");
  try {
    run.endInput();
    await run.field();
    await run.done();
  } finally {
    run.kill();
  }
}

/** Pulls length-prefixed fields off a stream, without copying more than it must. */
class FieldReader {
  private readonly iterator: AsyncIterator<Buffer>;
  private buffered: Buffer[] = [];
  private size = 0;

  constructor(stream: Readable) {
    this.iterator = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  }

  async field(): Promise<Buffer> {
    const len = (await this.take(4)).readUInt32BE(0);
    return len === 0 ? Buffer.alloc(0) : this.take(len);
  }

  private async take(n: number): Promise<Buffer> {
    while (this.size < n) {
      const next = await this.iterator.next();
      if (next.done === true) throw new MhError("INTERNAL", "the workspace helper's output ended early");
      this.buffered.push(next.value);
      this.size += next.value.length;
    }
    const all = this.buffered.length === 1 ? this.buffered[0]! : Buffer.concat(this.buffered, this.size);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.buffered = rest.length === 0 ? [] : [rest];
    this.size = rest.length;
    return out;
  }
}
