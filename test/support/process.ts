/**
 * Real service processes for fault tests: spawn one from its built dist/main.js with an
 * environment, wait until its gRPC port answers, and kill it (-9 included).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { nodeFlagsOf } from "./node-flags.js";

const ROOT = new URL("../../", import.meta.url).pathname;

export async function freePort(): Promise<number> {
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
): Promise<ServiceProcess> {
  const port = await freePort();
  const main = `apps/${app}/dist/main.js`;
  const child = spawn(process.execPath, [...nodeFlagsOf(main), ...nodeArgs, `${ROOT}${main}`], {
    env: { PATH: process.env["PATH"] ?? "", ...env, MH_GRPC_PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr?.on("data", (b: Buffer) => (out += b.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const handle: ServiceProcess = {
    child,
    port,
    output: () => out,
    async kill(signal = "SIGKILL") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${app} exited at start:\n${out}`);
    try {
      await ready(port);
      return handle;
    } catch {
      if (Date.now() > deadline) {
        await handle.kill();
        throw new Error(`${app} did not become ready:\n${out}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
