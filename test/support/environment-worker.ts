/**
 * The official SDK's EnvironmentWorker as a user runs it on their own machine, dialling out to
 * the gateway: in this process (`startWorker`), or as a process of its own that a test can kill
 * with -9 (`spawnWorker`, running environment-worker-main.ts), to play a machine that dies.
 * Both run the SDK's default tools, betaAgentToolset20260401, in `workdir`.
 */
import { spawn } from "node:child_process";
import Anthropic from "@anthropic-ai/sdk";
import { EnvironmentWorker } from "@anthropic-ai/sdk/helpers/beta/environments";

const ROOT = new URL("../../", import.meta.url).pathname;
const MAIN = new URL("./environment-worker-main.ts", import.meta.url).pathname;

export interface WorkerOptions {
  readonly baseURL: string;
  readonly environmentId: string;
  readonly environmentKey: string;
  readonly workdir: string;
  /** How long the worker keeps a session after its turn ended (the SDK's default is 60 s). */
  readonly maxIdleMs?: number;
  readonly workerId?: string;
}

export interface RunningWorker {
  /** Stops polling; the item in hand is force-stopped, as the SDK does on exit. */
  stop(): Promise<void>;
}

/** The worker's client: only the environment key and the gateway's URL. */
export function workerClient(baseURL: string, environmentKey: string): Anthropic {
  return new Anthropic({ baseURL, apiKey: null, authToken: environmentKey, maxRetries: 2, logLevel: process.env["MH_TEST_WORKER_LOG_LEVEL"] === "info" ? "info" : "off" });
}

export function startWorker(opts: WorkerOptions): RunningWorker {
  const ctrl = new AbortController();
  const worker = new EnvironmentWorker({
    client: workerClient(opts.baseURL, opts.environmentKey),
    environmentId: opts.environmentId,
    environmentKey: opts.environmentKey,
    workdir: opts.workdir,
    maxIdleMs: opts.maxIdleMs ?? 1000,
    ...(opts.workerId === undefined ? {} : { workerId: opts.workerId }),
  });
  let failure: Error | undefined;
  const running = worker.run(ctrl.signal).catch((err: unknown) => {
    if (!ctrl.signal.aborted) failure = err instanceof Error ? err : new Error(String(err));
  });
  return {
    async stop() {
      ctrl.abort();
      await running;
      if (failure !== undefined) throw failure;
    },
  };
}

export interface WorkerProcess {
  /** SIGKILL to the worker and whatever its tools started (its process group). */
  kill(): Promise<void>;
  output(): string;
}

export function spawnWorker(opts: WorkerOptions): WorkerProcess {
  const child = spawn(process.execPath, ["--import", "tsx", MAIN], {
    cwd: ROOT,
    detached: true,
    env: {
      PATH: process.env["PATH"] ?? "",
      MH_WORKER_BASE_URL: opts.baseURL,
      MH_WORKER_ENVIRONMENT_ID: opts.environmentId,
      MH_WORKER_ENVIRONMENT_KEY: opts.environmentKey,
      MH_WORKER_WORKDIR: opts.workdir,
      MH_WORKER_MAX_IDLE_MS: String(opts.maxIdleMs ?? 1000),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr?.on("data", (b: Buffer) => (out += b.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    output: () => out,
    async kill() {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(-child.pid, "SIGKILL");
      await exited;
    },
  };
}
