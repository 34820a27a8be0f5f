/**
 * Observes a measured window that starts `afterMs` from now (after a warm-up) and lasts `forMs`:
 * CPU use by process group and, when asked, what the database's backends wait on and how long
 * the disk under Postgres takes to flush (fsync-floor.ts). Runs alongside the load, so the
 * figures describe exactly the window the latencies come from.
 */
import { cpuMeter, type CpuUse } from "./cpu.js";
import { startFsyncProbe } from "./fsync-floor.js";
import { sampleWaits, type WaitProfile } from "./pgwaits.js";
import { sleep, type Summary } from "./stats.js";

export interface Observation {
  readonly cpu: CpuUse;
  readonly waits?: WaitProfile;
  /** 8 KiB write + fdatasync times beside Postgres's data during the window. */
  readonly fsync?: Summary;
}

export async function observe(
  afterMs: number,
  forMs: number,
  opts: { readonly servicePid?: number | undefined; readonly waitsOf?: string | undefined; readonly fsync?: boolean } = {},
): Promise<Observation> {
  const { servicePid, waitsOf } = opts;
  // Started with the warm-up: its process takes a moment to start sampling.
  const probe = opts.fsync === true ? startFsyncProbe(afterMs + forMs) : undefined;
  await sleep(afterMs);
  const from = Date.now();
  const cpu = cpuMeter(servicePid);
  const waits = waitsOf === undefined ? undefined : await sampleWaits(waitsOf);
  await sleep(forMs);
  const use = cpu.stop();
  const to = Date.now();
  const waited = await waits?.stop();
  // The probe runs a little past the window (it started before the warm-up); read after the rest stops.
  const fsync = await probe?.between(from, to);
  return {
    cpu: use,
    ...(waited === undefined ? {} : { waits: waited }),
    ...(fsync === undefined ? {} : { fsync }),
  };
}
