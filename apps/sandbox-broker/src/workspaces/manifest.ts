/**
 * A workspace snapshot's manifest: every directory, symlink and file of the workspace, each file as
 * the content-addressed chunks it is made of. A manifest is whole (not a difference from the
 * previous one), so any snapshot restores alone and deleting one never breaks another; what a
 * snapshot adds to the store is only the chunks no earlier one had. Stored gzipped JSON under
 * sessions/<session>/<seq>.json.gz; decode() checks everything a restore relies on, so a damaged
 * manifest is named as corrupt rather than half restored.
 */
import { gunzipSync, gzipSync } from "node:zlib";

/** A directory (mode), a symlink (target), or a file (mode, size, mtime in seconds, chunk hashes). */
export type Entry =
  | readonly ["d", number, string]
  | readonly ["l", string, string]
  | readonly ["f", number, string, number, number, readonly string[]];

export interface Manifest {
  readonly v: 1;
  readonly session: string;
  /** Per session, from 1: the order of its snapshots. */
  readonly seq: number;
  readonly sandbox: string;
  /** The tool call after which it was taken ("" for a pause). */
  readonly call: string;
  /** The session log's seq of that tool call's event (0 when the caller did not say). */
  readonly eventSeq: number;
  readonly at: string;
  /** Bytes of file content, and files, it holds. */
  readonly bytes: number;
  readonly files: number;
  readonly entries: readonly Entry[];
}

const HASH = /^[0-9a-f]{64}$/;

export function manifestKey(sessionId: string, seq: number): string {
  return `sessions/${sessionId}/${String(seq).padStart(10, "0")}.json.gz`;
}

/** The seq a manifest key names, or undefined for another key. */
export function seqOfKey(key: string): number | undefined {
  const m = /\/(\d{10})\.json\.gz$/.exec(key);
  return m === null ? undefined : Number(m[1]);
}

export function encode(manifest: Manifest): Buffer {
  return gzipSync(JSON.stringify(manifest), { level: 1 });
}

/** The manifest, or a sentence saying what is wrong with it. */
export function decode(bytes: Buffer): Manifest | string {
  let value: unknown;
  try {
    value = JSON.parse(gunzipSync(bytes).toString("utf8"));
  } catch (err) {
    return `it does not decode (${err instanceof Error ? err.message : String(err)})`;
  }
  if (typeof value !== "object" || value === null) return "it is not an object";
  const m = value as Record<string, unknown>;
  if (m["v"] !== 1) return `its version is ${JSON.stringify(m["v"])}, not 1`;
  if (typeof m["session"] !== "string" || !Number.isInteger(m["seq"]) || !Array.isArray(m["entries"])) return "it lacks session, seq or entries";
  for (const [i, e] of (m["entries"] as unknown[]).entries()) {
    const why = badEntry(e);
    if (why !== undefined) return `entries[${i}]: ${why}`;
  }
  return value as Manifest;
}

function badEntry(e: unknown): string | undefined {
  if (!Array.isArray(e)) return "not a list";
  const [type, a, path] = e as unknown[];
  const p = type === "l" ? a : path;
  if (typeof p !== "string" || !safePath(p)) return `path ${JSON.stringify(p)} is not a relative path inside the workspace`;
  if (type === "d") return Number.isInteger(a) ? undefined : "bad mode";
  if (type === "l") return typeof e[2] === "string" ? undefined : "bad target";
  if (type !== "f") return `unknown type ${JSON.stringify(type)}`;
  const [, mode, , size, mtime, chunks] = e as unknown[];
  if (!Number.isInteger(mode) || !Number.isInteger(size) || typeof mtime !== "number") return "bad mode, size or mtime";
  if (!Array.isArray(chunks) || !chunks.every((c) => typeof c === "string" && HASH.test(c))) return "bad chunk list";
  return undefined;
}

/** No absolute path, no "..", no empty part: a name the helper creates under /workspace. */
export function safePath(path: string): boolean {
  return path !== "" && !path.includes("\0") && path.split("/").every((part) => part !== "" && part !== "." && part !== "..");
}
