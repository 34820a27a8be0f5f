/**
 * The peer-credential helper against a real connection from another user's process: it names
 * that process's pid, uid and gid (its start already checked it names this process for its own).
 */
import { spawn } from "node:child_process";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PeerCredentials } from "./peer-credentials.js";

let helper: PeerCredentials;
let dir: string;

beforeAll(async () => {
  helper = await PeerCredentials.start();
  dir = await mkdtemp(join(tmpdir(), "mh-peer-test-"));
});

afterAll(async () => {
  helper?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("PeerCredentials", () => {
  it("names the process at the other end of each connection, as the kernel saw it", async () => {
    if (process.getuid?.() !== 0) return; // connecting as another user needs root
    const path = join(dir, "s");
    const server = createServer({ pauseOnConnect: true });
    await new Promise<void>((resolve) => server.listen(path, resolve));
    await chmod(dir, 0o755);
    await chmod(path, 0o666);
    try {
      const uid = 2_099_000_000 + Math.floor(Math.random() * 1000);
      const accepted = new Promise<Socket>((resolve) => server.once("connection", resolve));
      const client = spawn("/usr/bin/perl", ["-MIO::Socket::UNIX", "-e", "IO::Socket::UNIX->new(Peer => $ARGV[0]) or die $!; sleep 30", path], { uid, gid: uid, stdio: "ignore" });
      try {
        const socket = await accepted;
        expect(await helper.check(socket)).toEqual({ pid: client.pid, uid, gid: uid });
        socket.destroy();
      } finally {
        client.kill("SIGKILL");
      }
    } finally {
      server.close();
    }
  });
});
