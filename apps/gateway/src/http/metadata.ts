/**
 * Metadata bags of agents, environments and sessions: at most 16 keys of up to 64 characters,
 * values of up to 512, as the SDK documents. A violation is the SDK's typed `invalid_metadata`
 * error. Updates are patches: a string upserts a key, null deletes it.
 */
import { ApiError } from "../errors/api-error.js";

export type Metadata = Record<string, string>;
export type MetadataPatch = Record<string, string | null>;

export const MAX_METADATA_KEYS = 16;
export const MAX_METADATA_KEY_LENGTH = 64;
export const MAX_METADATA_VALUE_LENGTH = 512;

export function checkMetadata(metadata: Metadata, field = "metadata"): Metadata {
  const problems: string[] = [];
  const keys = Object.keys(metadata);
  if (keys.length > MAX_METADATA_KEYS) problems.push(`has ${keys.length} keys, more than ${MAX_METADATA_KEYS}`);
  for (const key of keys) {
    if (key.length === 0 || key.length > MAX_METADATA_KEY_LENGTH) {
      problems.push(`key ${JSON.stringify(key.slice(0, 80))} must be 1 to ${MAX_METADATA_KEY_LENGTH} characters`);
    }
    if ((metadata[key] ?? "").length > MAX_METADATA_VALUE_LENGTH) {
      problems.push(`value of ${JSON.stringify(key.slice(0, 80))} is over ${MAX_METADATA_VALUE_LENGTH} characters`);
    }
  }
  if (problems.length > 0) throw new ApiError("invalid_metadata", `${field}: ${problems.join("; ")}`);
  return { ...metadata };
}

/**
 * Applies a patch; null or undefined leaves the bag as it is. With `emptyDeletes` an empty
 * string deletes the key too (environments, per the SDK's EnvironmentUpdateParams).
 */
export function patchMetadata(
  current: Metadata,
  patch: MetadataPatch | null | undefined,
  opts: { emptyDeletes?: boolean; field?: string } = {},
): Metadata {
  if (patch === null || patch === undefined) return current;
  const next: Metadata = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null || (opts.emptyDeletes === true && value === "")) delete next[key];
    else next[key] = value;
  }
  return checkMetadata(next, opts.field);
}

/** A patch as upserts and removals, for a backend that applies it atomically (the credential vault proxy). */
export function splitPatch(patch: MetadataPatch | null | undefined): { upsert: Metadata; remove: string[] } {
  const entries = Object.entries(patch ?? {});
  return {
    upsert: Object.fromEntries(entries.filter((e): e is [string, string] => e[1] !== null)),
    remove: entries.filter(([, v]) => v === null).map(([k]) => k),
  };
}
