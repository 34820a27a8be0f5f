/**
 * Starts grpc-alone-server.ts as its own process (as the session log runs) and calls its health
 * Check with the same client as the session log's floor rows, so the two floors differ only in
 * the server: grpc-js alone, or the session log with its event loop, relay and pools.
 */
import { spawn } from "node:child_process";
import { healthClient } from "./service.js";

export interface GrpcAlone {
  readonly pid: number | undefined;
  check(): Promise<void>;
  stop(): Promise<void>;
}

const SERVER = new URL("./grpc-alone-server.ts", import.meta.url).pathname;

export async function startGrpcAlone(): Promise<GrpcAlone> {
  const child = spawn(process.execPath, ["--import", "tsx", SERVER], { stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  child.stderr.on("data", (b: Buffer) => (err += b.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // It binds port 0 and prints the port it got.
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (b: Buffer) => {
      out += b.toString();
      if (out.includes("\n")) resolve(Number(out.trim()));
    });
    child.once("exit", () => reject(new Error(`grpc-alone-server exited before binding: ${err}`)));
  });
  const health = healthClient(`127.0.0.1:${port}`);
  const stop = async (): Promise<void> => {
    health.close();
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  };
  // Up once a Check answers (grpc-js retries the connection until the server listens).
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      await health.check();
      return { pid: child.pid, check: () => health.check(), stop };
    } catch (e) {
      if (child.exitCode !== null || Date.now() > deadline) {
        await stop();
        throw new Error(`grpc-alone-server did not answer: ${err}`, { cause: e });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
