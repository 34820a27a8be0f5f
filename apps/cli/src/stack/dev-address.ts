/**
 * Where a running `mh dev` listens, written in its data directory once it is ready (and removed
 * when it stops), so that `mh run` and `mh sessions` on this machine use it, whatever port it
 * took, rather than a throwaway stack of their own or a guess at the default port. A file whose
 * process is gone, or whose gateway does not answer with the key, is not a running mh dev.
 */
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { alive } from "./dev-lock.js";

export const ADDRESS_FILE = "mh-dev.json";
/** How long the check that the gateway answers may take: it runs before every `mh run`. */
const PROBE_TIMEOUT_MS = 2_000;

export interface DevAddress {
  readonly pid: number;
  readonly url: string;
}

export async function writeDevAddress(dataDir: string, url: string): Promise<() => Promise<void>> {
  const path = join(dataDir, ADDRESS_FILE);
  await writeFile(path, `${JSON.stringify({ pid: process.pid, url })}\n`, { mode: 0o600 });
  return () => rm(path, { force: true });
}

/** The address a live mh dev wrote in `dataDir`, if any (not yet checked to answer). */
export async function readDevAddress(dataDir: string): Promise<DevAddress | undefined> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(join(dataDir, ADDRESS_FILE), "utf8"));
  } catch {
    return undefined;
  }
  const { pid, url } = (parsed ?? {}) as { pid?: unknown; url?: unknown };
  if (typeof pid !== "number" || typeof url !== "string" || !URL.canParse(url) || !alive(pid)) return undefined;
  return { pid, url };
}

/** The mh dev of `dataDir` when it runs and its gateway takes `apiKey`. */
export async function findRunningDev(dataDir: string, apiKey: string | undefined): Promise<DevAddress | undefined> {
  const address = await readDevAddress(dataDir);
  if (address === undefined || apiKey === undefined) return undefined;
  try {
    const res = await fetch(`${address.url}/v1/agents?limit=1`, {
      headers: { "x-api-key": apiKey, "anthropic-version": "2023-06-01" },
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
    await res.body?.cancel();
    return res.ok ? address : undefined;
  } catch {
    return undefined;
  }
}
