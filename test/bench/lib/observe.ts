/**
 * Observes a measured window that starts `afterMs` from now (after a warm-up) and lasts `forMs`:
 * CPU use by process group and, when asked, what the database's backends wait on. Runs alongside
 * the load, so the figures describe exactly the window the latencies come from.
 */
import { cpuMeter, type CpuUse } from "./cpu.js";
import { sampleWaits, type WaitProfile } from "./pgwaits.js";
import { sleep } from "./stats.js";

export interface Observation {
  readonly cpu: CpuUse;
  readonly waits?: WaitProfile;
}

export async function observe(
  afterMs: number,
  forMs: number,
  opts: { readonly servicePid?: number | undefined; readonly waitsOf?: string | undefined } = {},
): Promise<Observation> {
  const { servicePid, waitsOf } = opts;
  await sleep(afterMs);
  const cpu = cpuMeter(servicePid);
  const waits = waitsOf === undefined ? undefined : await sampleWaits(waitsOf);
  await sleep(forMs);
  const use = cpu.stop();
  return waits === undefined ? { cpu: use } : { cpu: use, waits: await waits.stop() };
}
