/**
 * Real service processes for fault tests: spawn one from its built dist/main.js with an
 * environment, on port 0, read back the port it bound, wait until it answers, and kill it (-9 included).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdir, readFile, readlink } from "node:fs/promises";
import { eventually } from "./eventually.js";
import { nodeFlagsOf } from "./node-flags.js";

const ROOT = new URL("../../", import.meta.url).pathname;

/**
 * The TCP ports `pid` listens on, read from /proc: its socket inodes (fd links) matched against
 * the listening sockets of its network namespace. A service started on port 0 says its port this
 * way whatever its log level, where a pre-picked free port could be taken by anyone before the
 * service bound it.
 */
export async function listeningPorts(pid: number): Promise<number[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [])) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => "");
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode !== undefined) inodes.add(inode);
  }
  const ports = new Set<number>();
  for (const table of ["tcp", "tcp6"]) {
    const text = await readFile(`/proc/${pid}/net/${table}`, "utf8").catch(() => "");
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      // local_address is cols[1] ("0100007F:C350"), st cols[3] (0A: LISTEN), inode cols[9].
      if (cols[3] === "0A" && cols[9] !== undefined && inodes.has(cols[9])) ports.add(parseInt(cols[1]!.split(":")[1]!, 16));
    }
  }
  return [...ports];
}

/**
 * A port nothing listens on now (one bound and closed at once): for a client that must find
 * nothing there, and for servers that cannot bind port 0 (Postgres, Kafka's controller quorum).
 * Our own services bind port 0 and are read back instead (see startProcess).
 */
export async function unusedPort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly port: number;
  /** Everything it wrote, for failure messages. */
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export async function startProcess(
  app: string,
  env: Record<string, string>,
  ready: (port: number) => Promise<unknown>,
  /** Flags for node itself besides the service's own (e.g. --cpu-prof, which NODE_OPTIONS does not allow). */
  nodeArgs: readonly string[] = [],
  /** Its gRPC port, for a restart on the port its callers know; port 0 by default. */
  fixedPort?: number,
): Promise<ServiceProcess> {
  const main = `apps/${app}/dist/main.js`;
  const child = spawn(process.execPath, [...nodeFlagsOf(main), ...nodeArgs, `${ROOT}${main}`], {
    env: { PATH: process.env["PATH"] ?? "", ...env, MH_GRPC_PORT: String(fixedPort ?? 0) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr?.on("data", (b: Buffer) => (out += b.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let port = 0;
  const handle: ServiceProcess = {
    child,
    get port() {
      return port;
    },
    output: () => out,
    async kill(signal = "SIGKILL") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
  // Generous: on a loaded machine (load 30 on 2 cores) a start alone has taken over 10 s.
  try {
    port = await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`${app} exited at start:\n${out}`);
        // Bound to port 0: of the ports it listens on once its server is up, the one `ready`
        // accepts (the gRPC port; the credential vault proxy also serves HTTP on another).
        const ports = fixedPort !== undefined ? [fixedPort] : child.pid === undefined ? [] : await listeningPorts(child.pid).catch(() => []);
        return firstReady(ports, ready).catch(() => undefined);
      },
      () => `${app} to become ready:\n${out}`,
      60_000,
    );
    return handle;
  } catch (err) {
    await handle.kill();
    throw err;
  }
}

async function firstReady(ports: readonly number[], ready: (port: number) => Promise<unknown>): Promise<number> {
  let last: unknown = new Error("listening on no port yet");
  for (const p of ports) {
    try {
      await ready(p);
      return p;
    } catch (err) {
      last = err;
    }
  }
  throw last;
}
