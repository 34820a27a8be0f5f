/**
 * Event-loop delay over a benchmark's window, per process, so that a latency's queueing can be
 * put where it happened: a service's own (its `/metrics` endpoint, MH_METRICS_PORT, whose
 * `nodejs_eventloop_*` gauges report the time since the previous scrape: one scrape at the
 * window's start, one at its end), this benchmark process's (the same sampler, in-process), and
 * the machine's floor: an idle Node process of its own whose only work is the sampler, so its
 * delay is the wait for a core and nothing else. Delays in ms (the sampler's 10 ms period taken
 * off), utilization 0 to 1.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { eventLoopSampler, type EventLoopWindow } from "@metaharness/telemetry";
import { listeningPorts } from "../../support/process.js";

const PROBE = fileURLToPath(new URL("./loop-probe-main.ts", import.meta.url));

export type LoopDelay = EventLoopWindow;

/** This process's own loop (packages/telemetry's sampler): `read()` returns the time since the previous read. */
export const ownLoopDelay = (): { read(): LoopDelay; stop(): void } => eventLoopSampler();

/** An idle Node process sampling its own loop (loop-probe-main.ts): `read()` is the time since the previous read. */
export async function idleProbe(): Promise<{ read(): Promise<LoopDelay>; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ["--import", "tsx", PROBE], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const read = async (): Promise<LoopDelay> => {
    child.stdin.write("\n");
    const next = await lines.next();
    if (next.done === true) throw new Error("the idle loop-delay probe exited");
    return JSON.parse(next.value) as LoopDelay;
  };
  try {
    await read(); // started, and its first window begins
  } catch (err) {
    child.kill();
    throw err;
  }
  return {
    read,
    async stop() {
      child.stdin.end();
      if (child.exitCode === null && child.signalCode === null) await once(child, "exit");
    },
  };
}

/** The `/metrics` URL of a service process started with MH_METRICS_PORT=0: its listening port that is not `grpcPort`. */
export async function metricsUrlOf(pid: number, grpcPort: number): Promise<string> {
  for (const port of await listeningPorts(pid)) {
    if (port === grpcPort) continue;
    const url = `http://127.0.0.1:${port}/metrics`;
    const ok = await fetch(url).then((r) => r.ok, () => false);
    if (ok) return url;
  }
  throw new Error(`process ${pid} serves no /metrics besides its gRPC port ${grpcPort} (is MH_METRICS_PORT set?)`);
}

/** The event-loop gauges of one scrape (the time since the previous scrape), ms. */
export async function scrapeLoopDelay(url: string): Promise<LoopDelay> {
  const text = await (await fetch(url)).text();
  const gauge = (name: string): number => Number(new RegExp(`^nodejs_eventloop_${name} (\\S+)$`, "m").exec(text)?.[1] ?? NaN);
  return {
    p50: gauge("delay_p50") * 1000,
    p99: gauge("delay_p99") * 1000,
    max: gauge("delay_max") * 1000,
    mean: gauge("delay_mean") * 1000,
    utilization: gauge("utilization"),
  };
}
