/**
 * A workspace snapshot's manifest: every directory, symlink and file of the workspace, each file as
 * the content-addressed chunks it is made of. A manifest is whole (not a difference from the
 * previous one), so any snapshot restores alone and deleting one never breaks another.
 *
 * Stored (v2) so that a hundred sessions of one repository store its listing once: the entries
 * without their mtimes are cut into blocks at content-defined places (after an entry whose path
 * hashes to 0 mod BLOCK_ENTRIES), each block gzipped JSON stored as a content-addressed chunk; the
 * manifest itself (sessions/<session>/<seq>.json.gz) names the blocks and carries the files'
 * mtimes apart, as microsecond deltas, which is what differs between sessions of one repository.
 * Cutting by content means a file added or removed changes its own block only. v1 manifests (the
 * entries inline, written before) are still read. decode checks everything a restore relies on,
 * so a damaged manifest or block is named as corrupt rather than half restored.
 */
import { gunzipSync, gzipSync } from "node:zlib";

/** A directory (mode), a symlink (target), or a file (mode, size, mtime in seconds, chunk hashes). */
export type Entry =
  | readonly ["d", number, string]
  | readonly ["l", string, string]
  | readonly ["f", number, string, number, number, readonly string[]];

/** An entry as a block stores it: a file without its mtime. */
type Listed = readonly ["d", number, string] | readonly ["l", string, string] | readonly ["f", number, string, number, readonly string[]];

/** A snapshot as a restore reads it: its entries whole. */
export interface Manifest {
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

/** What a manifest references in the store beside itself: its listing's blocks (none for v1). */
export interface Decoded extends Manifest {
  readonly blocks: readonly string[];
}

/** Average entries per listing block: a changed entry rewrites about this many. */
const BLOCK_ENTRIES = 64;
/** No block holds more, whatever the paths hash to. */
const MAX_BLOCK_ENTRIES = 1024;
const HASH = /^[0-9a-f]{64}$/;

export function manifestKey(sessionId: string, seq: number): string {
  return `sessions/${sessionId}/${String(seq).padStart(10, "0")}.json.gz`;
}

/** The seq a manifest key names, or undefined for another key. */
export function seqOfKey(key: string): number | undefined {
  const m = /\/(\d{10})\.json\.gz$/.exec(key);
  return m === null ? undefined : Number(m[1]);
}

/** An mtime in seconds, to the microsecond: what a manifest keeps exactly. */
export function mtimeOf(seconds: number): number {
  return Math.round(seconds * 1e6) / 1e6;
}

/** FNV-1a of a path: where a block ends does not depend on what comes before it. */
function pathHash(path: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) h = Math.imul(h ^ path.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

const pathOf = (e: Entry): string => (e[0] === "l" ? e[1] : e[2]);

/**
 * The manifest's stored bytes; `putBlock` stores a listing block (content-addressed) and returns
 * its hash. The blocks are put before the manifest is returned: a restore never meets a manifest
 * whose blocks were not written.
 */
export async function encode(manifest: Manifest, putBlock: (bytes: Buffer) => Promise<string>): Promise<Buffer> {
  const blocks: string[] = [];
  const mtimes: number[] = [];
  let block: Listed[] = [];
  let last = 0;
  const cut = async (): Promise<void> => {
    if (block.length === 0) return;
    blocks.push(await putBlock(gzipSync(JSON.stringify(block), { level: 1 })));
    block = [];
  };
  for (const e of manifest.entries) {
    if (e[0] === "f") {
      const us = Math.round(e[4] * 1e6);
      mtimes.push(us - last);
      last = us;
      block.push(["f", e[1], e[2], e[3], e[5]]);
    } else block.push(e);
    if (pathHash(pathOf(e)) % BLOCK_ENTRIES === 0 || block.length >= MAX_BLOCK_ENTRIES) await cut();
  }
  await cut();
  const { entries: _whole, ...header } = manifest;
  return gzipSync(JSON.stringify({ v: 2, ...header, blocks, mtimes }), { level: 1 });
}

/**
 * The manifest, or a sentence saying what is wrong with it. `getBlock` reads a listing block by
 * hash, checked against it; a block missing or damaged throws an error whose message names it
 * (the manifest is then corrupt), and a store that cannot be read throws what it throws.
 */
export async function decode(bytes: Buffer, getBlock: (hash: string) => Promise<Buffer>, isBadBlock: (err: unknown) => boolean): Promise<Decoded | string> {
  let value: unknown;
  try {
    value = JSON.parse(gunzipSync(bytes).toString("utf8"));
  } catch (err) {
    return `it does not decode (${err instanceof Error ? err.message : String(err)})`;
  }
  if (typeof value !== "object" || value === null) return "it is not an object";
  const m = value as Record<string, unknown>;
  if (typeof m["session"] !== "string" || !Number.isInteger(m["seq"])) return "it lacks session or seq";
  let entries: unknown[];
  let blocks: string[] = [];
  if (m["v"] === 1) {
    if (!Array.isArray(m["entries"])) return "it lacks entries";
    entries = m["entries"] as unknown[];
  } else if (m["v"] === 2) {
    const listed = await listing(m, getBlock, isBadBlock);
    if (typeof listed === "string") return listed;
    ({ entries, blocks } = listed);
  } else return `its version is ${JSON.stringify(m["v"])}, not 1 or 2`;
  for (const [i, e] of entries.entries()) {
    const why = badEntry(e);
    if (why !== undefined) return `entries[${i}]: ${why}`;
  }
  const { v: _v, blocks: _b, mtimes: _m, ...header } = m;
  return { ...(header as unknown as Manifest), entries: entries as Entry[], blocks };
}

/** A v2 manifest's entries: its blocks read in order, each file given its mtime back. */
async function listing(
  m: Record<string, unknown>,
  getBlock: (hash: string) => Promise<Buffer>,
  isBadBlock: (err: unknown) => boolean,
): Promise<{ entries: unknown[]; blocks: string[] } | string> {
  const blocks = m["blocks"];
  const mtimes = m["mtimes"];
  if (!Array.isArray(blocks) || !blocks.every((b) => typeof b === "string" && HASH.test(b))) return "bad block list";
  if (!Array.isArray(mtimes) || !mtimes.every((t) => Number.isSafeInteger(t))) return "bad mtime list";
  const entries: unknown[] = [];
  let file = 0;
  let us = 0;
  for (const hash of blocks as string[]) {
    let listed: unknown;
    try {
      listed = JSON.parse(gunzipSync(await getBlock(hash)).toString("utf8"));
    } catch (err) {
      if (err instanceof SyntaxError || isBadBlock(err) || (err instanceof Error && "code" in err && String(err.code).startsWith("Z_"))) {
        return `listing block ${hash}: ${err instanceof Error ? err.message : String(err)}`;
      }
      throw err;
    }
    if (!Array.isArray(listed)) return `listing block ${hash} is not a list`;
    for (const e of listed as unknown[]) {
      if (Array.isArray(e) && e[0] === "f" && e.length === 5) {
        const delta = (mtimes as number[])[file++];
        if (delta === undefined) return "fewer mtimes than files";
        us += delta;
        entries.push(["f", e[1], e[2], e[3], us / 1e6, e[4]]);
      } else entries.push(e);
    }
  }
  if (file !== mtimes.length) return "more mtimes than files";
  return { entries, blocks: blocks as string[] };
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

/** The chunks a file entry is made of. */
export function chunksOf(e: Entry): readonly string[] {
  return e[0] === "f" ? e[5] : [];
}

/** No absolute path, no "..", no empty part: a name the helper creates under /workspace. */
export function safePath(path: string): boolean {
  return path !== "" && !path.includes("\0") && path.split("/").every((part) => part !== "" && part !== "." && part !== "..");
}
