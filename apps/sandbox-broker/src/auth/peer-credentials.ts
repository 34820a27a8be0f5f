/**
 * Who is at the other end of a unix socket connection, as the kernel saw it at connect()
 * (SO_PEERCRED: pid, uid, gid; a process cannot choose what it says). Node has no getsockopt, so
 * one small Perl helper per broker asks for it: the broker writes the fd number of a connection
 * it accepted (and holds paused, so the fd stays open and cannot be reused meanwhile), the helper
 * copies that fd out of the broker with pidfd_getfd(2) (Linux 5.6; the broker is its parent, and
 * as root it may), reads SO_PEERCRED and the socket's inode, closes its copy and answers. The
 * broker checks the inode against its own fd, so an answer can only be about that connection.
 * About 50 µs a connection, against ~40 ms for spawning a helper per connection (measured here).
 * Perl is what the sandboxes' agent already needs on the host; /proc/net/unix does not name a
 * connection's peer, and a process found holding the other end is not necessarily who connected.
 */
import { spawn, type ChildProcessByStdio } from "node:child_process";
import { fstatSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { connect, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { MhError } from "@metaharness/errors";

// pidfd_open and pidfd_getfd have the same numbers on every architecture (added after 5.1).
const HELPER = String.raw`
use strict; use warnings; use POSIX (); use Socket qw(SOL_SOCKET SO_PEERCRED);
$| = 1;
my $pidfd = syscall(434, getppid() + 0, 0);
die "pidfd_open: $!\n" if $pidfd < 0;
while (my $line = <STDIN>) {
  my ($id, $fd) = $line =~ /^(\d+) (\d+)$/ or next;
  my $copy = syscall(438, $pidfd + 0, $fd + 0, 0);
  if ($copy < 0) { print "$id error $!\n"; next; }
  my $s;
  if (!open($s, "+<&=", $copy)) { print "$id error $!\n"; POSIX::close($copy); next; }
  my $cred = getsockopt($s, SOL_SOCKET, SO_PEERCRED);
  my @st = stat($s);
  close($s);
  if (!defined $cred) { print "$id error $!\n"; next; }
  my ($pid, $uid, $gid) = unpack("iII", $cred);
  print "$id $pid $uid $gid $st[1]\n";
}
`;

export interface PeerCredential {
  readonly pid: number;
  readonly uid: number;
  readonly gid: number;
}

/** Who may connect to a sandbox's sockets: processes of this host uid, as `credentials` reads them. */
export interface PeerGuard {
  readonly uid: number;
  readonly credentials: PeerCredentials;
}

type Pending = { resolve: (c: PeerCredential) => void; reject: (e: Error) => void; ino: number };

export class PeerCredentials {
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private failure: Error | undefined;

  private constructor(private readonly child: ChildProcessByStdio<Writable, Readable, Readable>) {
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr = (stderr + c.toString("utf8")).slice(-1000)));
    createInterface({ input: child.stdout }).on("line", (line) => this.answer(line));
    child.on("close", () => this.fail(new Error(`the peer-credential helper stopped${stderr === "" ? "" : `: ${stderr.trim()}`}`)));
    child.on("error", (err) => this.fail(err));
    child.stdin.on("error", () => undefined);
  }

  /** Starts the helper; throws FAILED_PRECONDITION when it cannot run here (no perl, no pidfd_getfd). */
  static async start(perl = "/usr/bin/perl"): Promise<PeerCredentials> {
    const helper = new PeerCredentials(spawn(perl, ["-e", HELPER], { stdio: ["pipe", "pipe", "pipe"], env: {} }));
    // It never keeps the broker's process alive by itself.
    helper.child.unref();
    for (const pipe of [helper.child.stdin, helper.child.stdout, helper.child.stderr]) (pipe as unknown as { unref?: () => void }).unref?.();
    try {
      await helper.selfTest();
      return helper;
    } catch (err) {
      helper.close();
      throw new MhError("FAILED_PRECONDITION", `the broker cannot check who connects to a sandbox's sockets (Perl's getsockopt over pidfd_getfd, Linux 5.6): ${(err as Error).message}`);
    }
  }

  /** The peer of a connection accepted on a unix socket (held paused until this answers). */
  check(socket: Socket): Promise<PeerCredential> {
    const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (fd === undefined || fd < 0) return Promise.reject(new Error("the connection has no file descriptor"));
    const ino = fstatSync(fd).ino;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, ino });
      this.child.stdin.write(`${id} ${fd}\n`);
    });
  }

  close(): void {
    this.child.kill("SIGKILL");
  }

  private answer(line: string): void {
    const [id, pid, uid, gid, ino] = line.split(" ");
    const waiting = this.pending.get(Number(id));
    if (waiting === undefined) return;
    this.pending.delete(Number(id));
    if (pid === "error") return waiting.reject(new Error(`SO_PEERCRED: ${line.slice(line.indexOf("error") + 6)}`));
    // The fd was the connection's when asked: the inode says the helper read the same socket.
    if (Number(ino) !== waiting.ino) return waiting.reject(new Error("SO_PEERCRED answered for another socket"));
    waiting.resolve({ pid: Number(pid), uid: Number(uid), gid: Number(gid) });
  }

  private fail(err: Error): void {
    this.failure ??= err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  private async selfTest(): Promise<void> {
    const dir = await mkdtemp(join(tmpdir(), "mh-peercred-"));
    const server = createServer({ pauseOnConnect: true });
    try {
      await new Promise<void>((resolve, reject) => server.once("error", reject).listen(join(dir, "s"), resolve));
      const accepted = new Promise<Socket>((resolve) => server.once("connection", resolve));
      const client = connect(join(dir, "s"));
      const socket = await accepted;
      const peer = await this.check(socket);
      socket.destroy();
      client.destroy();
      if (peer.pid !== process.pid || peer.uid !== process.getuid?.()) throw new Error(`it saw pid ${peer.pid} uid ${peer.uid}, not this process`);
    } finally {
      server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }
}
