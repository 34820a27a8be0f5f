/**
 * Metadata of vaults and credentials: string pairs, bounded as the Managed Agents API bounds them
 * (at most 16 keys of 1-64 characters, values of up to 512), so whatever the gateway accepts fits
 * and a patch applied here, under the row lock, cannot grow a map past the limit.
 */
import { invalidArgument } from "@metaharness/errors";
import type { MetadataPatch } from "@metaharness/proto";

export const MAX_METADATA_KEYS = 16;
export const MAX_METADATA_KEY = 64;
export const MAX_METADATA_VALUE = 512;

export function checkMetadata(metadata: Readonly<Record<string, string>>, field = "metadata"): Record<string, string> {
  const keys = Object.keys(metadata);
  if (keys.length > MAX_METADATA_KEYS) throw invalidArgument(field, `has ${keys.length} keys, more than ${MAX_METADATA_KEYS}`);
  for (const key of keys) {
    if (key.length === 0 || key.length > MAX_METADATA_KEY) throw invalidArgument(field, `keys must be 1 to ${MAX_METADATA_KEY} characters`);
    if ((metadata[key] ?? "").length > MAX_METADATA_VALUE) throw invalidArgument(field, `values must be at most ${MAX_METADATA_VALUE} characters`);
  }
  return { ...metadata };
}

/** `current` with `patch` applied (upserts, then removals), checked. */
export function patchMetadata(current: Readonly<Record<string, string>>, patch: MetadataPatch | undefined): Record<string, string> {
  if (patch === undefined) return { ...current };
  const next: Record<string, string> = { ...current, ...patch.upsert };
  for (const key of patch.remove) delete next[key];
  return checkMetadata(next);
}
