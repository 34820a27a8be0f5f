/**
 * The benchmark's side of call-counter.ts: the node flags and environment that load the counter
 * into a service process, and the counts read back (SIGUSR2, then the file it writes), so a
 * benchmark prints a process's gRPC calls and Postgres statements per turn beside its CPU.
 */
import { readFile, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import { fileURLToPath } from "node:url";
import type { ChildProcess } from "node:child_process";
import { eventually } from "../../support/eventually.js";

const COUNTER = fileURLToPath(new URL("./call-counter.ts", import.meta.url));

export interface CallCounter {
  /** Node flags of the counted process (startProcess's nodeArgs). */
  readonly nodeArgs: readonly string[];
  /** Its environment's addition. */
  readonly env: Record<string, string>;
  /** The counts so far, by "grpc <Method>" and "sql <first words>". */
  read(child: ChildProcess): Promise<Record<string, number>>;
  dispose(): Promise<void>;
}

export function callCounter(name: string): CallCounter {
  const file = `${os.tmpdir()}/mh-bench-counts-${name}-${process.pid}-${Date.now().toString(36)}.json`;
  let seen = 0;
  return {
    nodeArgs: ["--import", createRequire(import.meta.url).resolve("tsx/esm"), "--import", COUNTER],
    env: { MH_BENCH_COUNTS_FILE: file },
    async read(child) {
      child.kill("SIGUSR2");
      const out = await eventually(async () => {
        const text = await readFile(file, "utf8").catch(() => "");
        if (text === "") return undefined;
        const parsed = JSON.parse(text) as { seq: number; counts: Record<string, number> };
        return parsed.seq > seen ? parsed : undefined;
      }, () => `${name}'s call counts in ${file}`);
      seen = out.seq;
      return out.counts;
    },
    dispose: () => rm(file, { force: true }),
  };
}

/** (after - before) / turns, by key, keys with no change left out. */
export function perTurn(before: Record<string, number>, after: Record<string, number>, turns: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d !== 0) out[k] = d / Math.max(1, turns);
  }
  return out;
}
