/**
 * Open- and closed-loop load from ghz, a gRPC load generator written in Go (built by
 * infra/ghz/install.sh), for rows beside the Node client's. Why: the bench process is a Node
 * client whose own pauses (its scavenges take 3-10 ms here) land in every latency it measures, as
 * a harness's would; a Go client's collector runs concurrently with sub-millisecond pauses, so its
 * rows show what the server and the machine take without most of the client's share. ghz reads
 * the methods through the server's reflection and sends JSON-described requests.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const INSTALL = fileURLToPath(new URL("../../../infra/ghz/install.sh", import.meta.url));

export interface GhzLoad {
  /** host:port of a plaintext gRPC server with reflection. */
  readonly address: string;
  /** "package.Service/Method" */
  readonly call: string;
  /** The request as JSON; ghz expands templates such as {{.WorkerID}} (g0c0, g1c0, ... with one connection). */
  readonly data: unknown;
  readonly metadata?: Readonly<Record<string, string>>;
  /**
   * Calls per second in total, spread over `workers` (each one call at a time) on one HTTP/2
   * connection; undefined: a closed loop, each worker calling again as soon as its call returns.
   */
  readonly rate: number | undefined;
  readonly workers: number;
  readonly warmupMs: number;
  readonly measureMs: number;
}

export interface GhzResult {
  /**
   * Latency of every call that ended inside the measured window, in ms, as ghz times it: from
   * when it sends. In an open loop, when all workers are busy ghz's pacer waits and then sends
   * the missed calls in a burst, so a stall longer than `workers` calls' spacing is not counted
   * as waiting, as the Node open loop (lib/load.ts) counts it.
   */
  readonly latencies: number[];
  /** Calls that ended in the measured window over the time they took: below `rate` if ghz fell behind. */
  readonly callsPerSecond: number;
}

interface GhzDetail {
  readonly timestamp: string;
  readonly latency: number;
  readonly status: string;
  readonly error: string;
}

/** Builds ghz on first use (about a minute here; needs Go; its progress shows on stderr) and returns its path. */
export async function ghzBinary(): Promise<string> {
  const stdout = await new Promise<string>((resolve, reject) => {
    const child = spawn("bash", [INSTALL], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`infra/ghz/install.sh exited with ${code}`))));
  });
  const path = stdout.trim().split("\n").pop();
  if (path === undefined || path === "") throw new Error("infra/ghz/install.sh printed no path");
  return path;
}

/** Runs the load; every call must succeed (a failed call would measure an error path). */
export async function ghzLoad(bin: string, load: GhzLoad): Promise<GhzResult> {
  const windowMs = load.warmupMs + load.measureMs;
  const args = [
    "--insecure",
    "--call", load.call,
    "--data", JSON.stringify(load.data),
    "--metadata", JSON.stringify(load.metadata ?? {}),
    "--connections", "1",
    "--concurrency", String(load.workers),
    ...(load.rate === undefined
      ? // A closed loop has no count to give: it runs for the window, and the calls still in
        // flight when it ends are waited for (ghz cancels them by default).
        ["--duration", `${windowMs}ms`, "--duration-stop", "wait"]
      : // A count, not a duration: when a duration ends, ghz cancels the calls still in flight.
        ["--rps", String(load.rate), "--total", String(Math.round((load.rate * windowMs) / 1000))]),
    "--format", "json",
    load.address,
  ];
  const out = await run(bin, args);
  const details = (JSON.parse(out) as { details?: GhzDetail[] }).details ?? [];
  const failed = details.filter((d) => d.status !== "OK");
  if (failed.length > 0) throw new Error(`ghz: ${failed.length} of ${details.length} calls failed, first: ${failed[0]?.status} ${failed[0]?.error}`);
  // A call's timestamp is when it ended.
  const ends = details.map((d) => Date.parse(d.timestamp));
  const from = Math.min(...ends) + load.warmupMs;
  const measured = details.filter((_, i) => (ends[i] ?? 0) >= from);
  const spanMs = Math.max(load.measureMs, Math.max(...ends) - from);
  return { latencies: measured.map((d) => d.latency / 1e6), callsPerSecond: (measured.length * 1000) / spanMs };
}

/** Runs `bin` asynchronously (the bench's event loop keeps draining the service's output meanwhile). */
function run(bin: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
    child.once("error", reject);
    // "close", not "exit": its output (about 1 MB at 1,000 calls/s) may still be in the pipe at exit.
    child.once("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`ghz exited with ${code}: ${err.trim()}`))));
  });
}
