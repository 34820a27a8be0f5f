/**
 * The durable-write floor of a measured window: how long the disk under Postgres takes to make
 * 8 KiB durable (a write and an fdatasync, what a commit's WAL flush comes down to), sampled
 * 10 ms apart beside Postgres's data folder by a process of its own (fsync-probe-main.ts). Why:
 * an append is answered after its commit's WAL flush, so when the disk's flushes stall (on the
 * 2-core VM: 100 ms and more a few seconds after a database is dropped, as ext4 commits its
 * journal and discards the freed blocks) no append latency can stay under the stall, whatever the
 * code does; the row says whether a window's tail was the disk's. It samples the folder holding
 * the data folder that infra/postgres recorded (.local/postgres/datadir): the disk of the
 * benchmark's Postgres when that is infra/'s, as `npm run bench` expects; without that record
 * there is nothing to sample.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { summarize, type Summary } from "./stats.js";

const PROBE = fileURLToPath(new URL("./fsync-probe-main.ts", import.meta.url));
const DATADIR_FILE = fileURLToPath(new URL("../../../.local/postgres/datadir", import.meta.url));
/** The pause after each sample (so samples are 10 ms plus a flush apart). */
const PAUSE_MS = 10;

export interface FsyncProbe {
  /**
   * The flush times sampled between two Date.now() instants, once the probe has ended; never
   * rejects: a probe that failed (its error on stderr) gives no samples (n = 0) rather than
   * ending the benchmark.
   */
  between(fromMs: number, toMs: number): Promise<Summary>;
}

/** The folder holding Postgres's data folder (the same disk, not inside it); undefined without infra/'s Postgres. */
export function fsyncProbeDir(): string | undefined {
  if (!existsSync(DATADIR_FILE)) return undefined;
  const datadir = readFileSync(DATADIR_FILE, "utf8").trim();
  return datadir === "" ? undefined : dirname(datadir);
}

/**
 * Samples for `forMs` from now (the process takes a few hundred ms to start, so start it with
 * the warm-up); undefined when there is no disk to sample.
 */
export function startFsyncProbe(forMs: number): FsyncProbe | undefined {
  const dir = fsyncProbeDir();
  if (dir === undefined) return undefined;
  const samples = new Promise<Array<[number, number]>>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", PROBE, dir, String(forMs), String(PAUSE_MS)], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.once("error", reject);
    child.once("close", (code) =>
      code === 0 ? resolve(JSON.parse(stdout) as Array<[number, number]>) : reject(new Error(`fsync probe exited with ${code}: ${stderr.trim()}`)),
    );
  });
  const settled = samples.catch((err: unknown) => {
    process.stderr.write(`fsync probe in ${dir} failed: ${String(err)}\n`);
    return [];
  });
  return {
    async between(fromMs, toMs) {
      return summarize((await settled).filter(([at]) => at >= fromMs && at <= toMs).map(([, took]) => took));
    },
  };
}
