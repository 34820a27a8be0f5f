/**
 * Manifests as stored (v2): a manifest reads back as it was written; two sessions of one tree
 * written at other times share every listing block (only the mtimes differ); a file added changes
 * the block it falls in, not the others; a v1 manifest still reads; a missing block is named.
 */
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { decode, encode, mtimeOf, type Entry, type Manifest } from "./manifest.js";

class MissingBlock extends Error {}

/** An in-memory block store: content-addressed, like the chunks. */
function blockStore(): { blocks: Map<string, Buffer>; put: (b: Buffer) => Promise<string>; get: (h: string) => Promise<Buffer> } {
  const blocks = new Map<string, Buffer>();
  return {
    blocks,
    put: (b) => {
      const hash = createHash("sha256").update(b).digest("hex");
      blocks.set(hash, b);
      return Promise.resolve(hash);
    },
    get: (h) => {
      const b = blocks.get(h);
      return b === undefined ? Promise.reject(new MissingBlock(`chunk ${h} is missing`)) : Promise.resolve(b);
    },
  };
}

const HASH = "ab".repeat(32);

/** A tree of `files` files in folders, written from `t0` seconds on, a few µs apart. */
function tree(files: number, t0: number, extra: readonly Entry[] = []): Entry[] {
  const out: Entry[] = [];
  for (let d = 0; d < 10; d++) out.push(["d", 0o755, `src/${d}`]);
  for (let i = 0; i < files; i++) out.push(["f", 0o644, `src/${i % 10}/file-${i}.ts`, 100 + i, mtimeOf(t0 + i * 0.000137), [HASH]]);
  out.push(["l", "link", "src/0/file-0.ts"], ...extra);
  return out;
}

const manifest = (entries: Entry[], session = "sesn_a"): Manifest => ({ session, seq: 1, sandbox: "sbx_1", call: "call_1", eventSeq: 7, at: "2026-12-05T00:00:00.000Z", bytes: 1, files: 1, entries });
const isMissing = (err: unknown): boolean => err instanceof MissingBlock;

describe("workspace manifests", () => {
  it("read back as written", async () => {
    const s = blockStore();
    const m = manifest(tree(1000, 1_733_360_000.123456));
    const back = await decode(await encode(m, s.put), s.get, isMissing);
    expect(back).toEqual({ ...m, blocks: [...s.blocks.keys()] });
  });

  it("of two sessions of one tree share every listing block; the manifests carry only mtimes and block names", async () => {
    const s = blockStore();
    const first = await encode(manifest(tree(1000, 1_733_360_000.5)), s.put);
    const kept = s.blocks.size;
    expect(kept).toBeGreaterThan(5);
    const second = await encode(manifest(tree(1000, 1_733_369_999.25), "sesn_b"), s.put);
    expect(s.blocks.size).toBe(kept);
    const listing = [...s.blocks.values()].reduce((n, b) => n + b.length, 0);
    expect(second.length).toBeLessThan(listing / 4);
    expect(first.length).toBeLessThan(listing / 4);
  });

  it("change only the block a new file falls in", async () => {
    const s = blockStore();
    await encode(manifest(tree(1000, 1_733_360_000)), s.put);
    const before = s.blocks.size;
    await encode(manifest(tree(1000, 1_733_360_000, [["f", 0o644, "zz/new.txt", 3, 1_733_360_100, [HASH]]])), s.put);
    expect(s.blocks.size - before).toBe(1);
  });

  it("of v1 (entries inline) still read", async () => {
    const entries = tree(3, 1_733_360_000.5);
    const v1 = gzipSync(JSON.stringify({ v: 1, ...manifest(entries) }));
    expect(await decode(v1, () => Promise.reject(new Error("no blocks in v1")), isMissing)).toMatchObject({ entries, blocks: [] });
  });

  it("name a missing block, and a store failure is thrown, not taken for corruption", async () => {
    const s = blockStore();
    const bytes = await encode(manifest(tree(100, 1_733_360_000)), s.put);
    const [gone] = s.blocks.keys();
    s.blocks.delete(gone!);
    expect(await decode(bytes, s.get, isMissing)).toBe(`listing block ${gone!}: chunk ${gone!} is missing`);
    await expect(decode(bytes, () => Promise.reject(new Error("store down")), isMissing)).rejects.toThrow("store down");
  });
});
