/**
 * Content-addressed chunks: a file's bytes cut into pieces of at most CHUNK_BYTES, and the blocks of
 * snapshots' listings (manifest.ts), each stored once under the SHA-256 of its bytes, so a hundred sessions of one repository store its files once,
 * and a snapshot uploads only the chunks the store does not have. A chunk read back is checked
 * against its name: a damaged one is reported, never restored.
 */
import { createHash } from "node:crypto";
import { MhError } from "@metaharness/errors";
import type { BlobStore } from "./blob-store.js";

/** Large enough that an object's per-request cost is small against its bytes, small enough to dedupe. */
export const CHUNK_BYTES = 4 * 1024 * 1024;
/** Chunks read or written at once. */
const PARALLEL = 6;
/** How long a chunk this process saw stored is trusted to still be there (collect() keeps younger ones). */
const KNOWN_TTL_MS = 30 * 60_000;

export function chunkKey(hash: string): string {
  return `chunks/${hash.slice(0, 2)}/${hash}`;
}

export function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** A missing or damaged chunk, found while restoring. */
export class BadChunkError extends Error {
  override readonly name = "BadChunkError";
}

export class Chunks {
  /** Chunks this process stored or saw, by hash, with when. */
  private readonly known = new Map<string, number>();
  private readonly uploads = new Set<Promise<void>>();
  private failed: unknown = undefined;

  constructor(private readonly store: BlobStore) {}

  /**
   * Stores a chunk unless the store has it; returns its hash and the bytes it added. Uploads run
   * in the background, PARALLEL at once; flush() waits for them and throws the first failure.
   */
  async add(bytes: Buffer): Promise<{ hash: string; added: number }> {
    const hash = sha256(bytes);
    const seen = this.known.get(hash);
    if (seen !== undefined && Date.now() - seen < KNOWN_TTL_MS) return { hash, added: 0 };
    while (this.uploads.size >= PARALLEL) await Promise.race(this.uploads);
    if (this.failed !== undefined) throw MhError.from(this.failed);
    const key = chunkKey(hash);
    const upload = (async () => {
      if (!(await this.store.has(key))) await this.store.put(key, bytes);
      this.known.set(hash, Date.now());
    })()
      .catch((err: unknown) => {
        this.failed ??= err;
      })
      .finally(() => this.uploads.delete(upload));
    this.uploads.add(upload);
    return { hash, added: bytes.length };
  }

  async flush(): Promise<void> {
    await Promise.all(this.uploads);
    const failed = this.failed;
    this.failed = undefined;
    if (failed !== undefined) throw MhError.from(failed);
  }

  /** One chunk, checked against its hash: a missing or damaged one is a BadChunkError. */
  async get(hash: string): Promise<Buffer> {
    const bytes = await this.store.get(chunkKey(hash));
    if (bytes === undefined) throw new BadChunkError(`chunk ${hash} is missing`);
    if (sha256(bytes) !== hash) throw new BadChunkError(`chunk ${hash} does not match its hash`);
    this.known.set(hash, Date.now());
    return bytes;
  }

  /** Reads chunks in order, PARALLEL ahead, each checked against its hash. */
  async *read(hashes: readonly string[]): AsyncIterable<Buffer> {
    const ahead: Promise<Buffer>[] = [];
    let next = 0;
    try {
      while (next < hashes.length || ahead.length > 0) {
        while (ahead.length < PARALLEL && next < hashes.length) {
          const p = this.get(hashes[next++]!);
          p.catch(() => undefined);
          ahead.push(p);
        }
        yield await ahead.shift()!;
      }
    } finally {
      await Promise.allSettled(ahead);
    }
  }

  /** Forgets chunks collect() removed. */
  forget(hashes: Iterable<string>): void {
    for (const h of hashes) this.known.delete(h);
  }
}
