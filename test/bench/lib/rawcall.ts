/**
 * Calls through rawcall (rawcall/main.go), the benchmarks' Go gRPC client, one at a time, so a
 * benchmark can interleave them round by round with its Node client's calls. rawcall times each
 * call in its own process, from send until it returns, without decoding the response: neither
 * the Node client's collector pauses nor a decode are in its figure. The response comes back as
 * bytes, for the benchmark to check (outside the timing) that it is what was asked for.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const BUILD = fileURLToPath(new URL("../rawcall/build.sh", import.meta.url));

export interface RawCall {
  /** `method` is "/package.Service/Method"; resolves with rawcall's timing and the response's bytes. */
  call(method: string, request: Uint8Array): Promise<{ elapsedMs: number; response: Buffer }>;
  stop(): Promise<void>;
}

/** Builds rawcall if its sources changed (needs Go), starts it against `address` (plaintext). */
export async function startRawCall(address: string, bearerToken: string): Promise<RawCall> {
  const bin = await build();
  const child = spawn(bin, ["-addr", address], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, RAWCALL_BEARER_TOKEN: bearerToken },
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  let exited: string | undefined;
  child.once("exit", (code, signal) => (exited = `rawcall exited (${code ?? signal}): ${stderr.trim()}`));
  // A child that cannot start, or a pipe it closed (EPIPE on a write): recorded for the next call,
  // and its output's end settles the call in flight.
  const failed = (err: Error): void => {
    exited ??= `rawcall: ${err.message} ${stderr.trim()}`;
  };
  child.on("error", failed);
  child.stdin.on("error", failed);
  let busy = false;
  return {
    async call(method, request) {
      // One at a time: rawcall answers in order, and a second caller would be timed behind the first.
      if (busy) throw new Error("rawcall: a call is already in flight");
      if (exited !== undefined) throw new Error(exited);
      busy = true;
      try {
        child.stdin.write(`${method} ${Buffer.from(request).toString("base64")}\n`);
        const line = await lines.next();
        if (line.done === true) throw new Error(exited ?? `rawcall closed its output: ${stderr.trim()}`);
        return parse(line.value, method);
      } finally {
        busy = false;
      }
    },
    stop: () => stop(child),
  };
}

function parse(line: string, method: string): { elapsedMs: number; response: Buffer } {
  const [kind, first, ...rest] = line.split(" ");
  if (kind === "ok" && first !== undefined) {
    return { elapsedMs: Number(first) / 1e6, response: Buffer.from(rest.join(" "), "base64") };
  }
  throw new Error(`rawcall ${method}: ${kind === "error" ? `gRPC code ${first}: ${rest.join(" ")}` : line}`);
}

/** Closes its input (it exits when it has answered the call in flight), killing it after 5 s. */
function stop(child: ChildProcessWithoutNullStreams): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill("SIGKILL"), 5_000);
    child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
    child.stdin.end();
  });
}

function build(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [BUILD], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    child.once("error", reject);
    child.once("close", (code) => {
      const path = out.trim().split("\n").pop();
      if (code === 0 && path !== undefined && path !== "") resolve(path);
      else reject(new Error(`test/bench/rawcall/build.sh exited with ${code}`));
    });
  });
}
