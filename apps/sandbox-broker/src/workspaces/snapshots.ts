/**
 * Workspace snapshots: after a tool call that changed a sandbox's workspace, record it in the
 * store (only the files whose size, mtime, ctime or inode changed are read, and only chunks the
 * store lacks are written); a new sandbox of the session starts from the last one. The previous
 * scan of each sandbox is kept in memory as its base, so an unchanged workspace costs a scan and
 * nothing more. A corrupt or missing snapshot is skipped, named, for the one before it.
 */
import { MhError } from "@metaharness/errors";
import type { Logger } from "@metaharness/service-kit/logging";
import type { BlobStore } from "./blob-store.js";
import { BadChunkError, CHUNK_BYTES, Chunks } from "./chunks.js";
import { decode, encode, manifestKey, mtimeOf, seqOfKey, type Decoded, type Entry, type Manifest } from "./manifest.js";
import { HelperRun, clearWorkspace, fields, scanWorkspace, type SandboxProcess } from "./sandbox-files.js";

const MiB = 1024 * 1024;

export interface SnapshotInfo {
  readonly sessionId: string;
  readonly sandboxId: string;
  /** The tool call it follows ("" for a pause). */
  readonly callId: string;
  readonly eventSeq: number;
}

export type SnapshotResult =
  | { readonly kind: "unchanged"; readonly ms: number }
  | { readonly kind: "saved"; readonly seq: number; readonly bytes: number; readonly addedBytes: number; readonly ms: number };

export interface RestoreResult {
  readonly sessionId: string;
  readonly seq: number;
  readonly callId: string;
  readonly files: number;
  readonly bytes: number;
  readonly ms: number;
  /** The newer snapshots that could not be restored, each with why. */
  readonly skipped: readonly string[];
}

/** Where a restore starts from: the session's last snapshot, or another session's at an event. */
export interface RestoreSource {
  readonly sessionId: string;
  /** Only snapshots taken at or before this event seq (a fork); undefined: the last. */
  readonly atEventSeq?: number;
}

interface Base {
  readonly sessionId: string;
  /** path -> [scan key, its entry]. */
  readonly files: Map<string, readonly [string, Entry]>;
  /** The entries of the last snapshot, serialised: an equal scan is no change. */
  entries: string;
}

export class Snapshots {
  private readonly chunks: Chunks;
  private readonly bases = new Map<string, Base>();
  /** Per session, the last seq written or seen. */
  private readonly lastSeq = new Map<string, number>();
  /** Per sandbox, the snapshot under way (they run one at a time). */
  private readonly running = new Map<string, Promise<SnapshotResult>>();

  constructor(
    readonly store: BlobStore,
    private readonly opts: { readonly quotaBytes: number; readonly logger: Logger },
  ) {
    this.chunks = new Chunks(store);
  }

  /** Records the workspace if it changed; throws UNAVAILABLE (store) or RESOURCE_EXHAUSTED (quota). */
  snapshot(target: SandboxProcess, info: SnapshotInfo): Promise<SnapshotResult> {
    const previous = this.running.get(info.sandboxId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.take(target, info));
    this.running.set(info.sandboxId, next);
    void next.catch(() => undefined).finally(() => {
      if (this.running.get(info.sandboxId) === next) this.running.delete(info.sandboxId);
    });
    return next;
  }

  /** Chunks retention deleted: no longer taken as stored. */
  forgetChunks(hashes: Iterable<string>): void {
    this.chunks.forget(hashes);
  }

  /**
   * The sandbox was passed to another session (Transfer): its base becomes that session's, so the
   * next snapshot reads only what changed and is saved under the new session whatever changed.
   */
  handOver(sandboxId: string, toSession: string): void {
    const base = this.bases.get(sandboxId);
    if (base !== undefined) this.bases.set(sandboxId, { sessionId: toSession, files: base.files, entries: "" });
  }

  /** The sandbox ended: its base goes (its snapshots stay, for the session's next sandbox). */
  forget(sandboxId: string): void {
    this.bases.delete(sandboxId);
  }

  private async take(target: SandboxProcess, info: SnapshotInfo): Promise<SnapshotResult> {
    const started = performance.now();
    const base = this.bases.get(info.sandboxId);
    const known = new Map<string, string>();
    if (base !== undefined && base.sessionId === info.sessionId) for (const [path, [key]] of base.files) known.set(path, key);
    const files = new Map<string, readonly [string, Entry]>();
    const entries: Entry[] = [];
    let bytes = 0;
    let addedBytes = 0;
    let count = 0;
    for await (const e of scanWorkspace(target, known)) {
      if (e.type === "d") entries.push(["d", parseInt(e.mode, 8), e.path]);
      else if (e.type === "l") entries.push(["l", e.path, e.target]);
      else if (e.type === "f") {
        const kept = base?.files.get(e.path);
        if (kept === undefined) throw new MhError("INTERNAL", `the scan kept ${e.path}, which the base does not have`);
        entries.push(kept[1]);
        files.set(e.path, kept);
        bytes += (kept[1] as Extract<Entry, readonly ["f", ...unknown[]]>)[3];
        count++;
      } else {
        const [size, mtime] = e.key.split("/");
        const hashes: string[] = [];
        let length = 0;
        let pending: Buffer[] = [];
        let pendingBytes = 0;
        const cut = async (): Promise<void> => {
          const chunk = Buffer.concat(pending, pendingBytes);
          pending = [];
          pendingBytes = 0;
          if (bytes + length > this.opts.quotaBytes) return; // over quota: read on for the size, store nothing
          const { hash, added } = await this.chunks.add(chunk);
          hashes.push(hash);
          addedBytes += added;
        };
        for await (const piece of e.pieces) {
          length += piece.length;
          let rest = piece;
          while (pendingBytes + rest.length >= CHUNK_BYTES) {
            const take = CHUNK_BYTES - pendingBytes;
            pending.push(rest.subarray(0, take));
            pendingBytes += take;
            rest = rest.subarray(take);
            await cut();
          }
          if (rest.length > 0) {
            pending.push(Buffer.from(rest));
            pendingBytes += rest.length;
          }
        }
        if (pendingBytes > 0) await cut();
        const entry: Entry = ["f", parseInt(e.mode, 8), e.path, length, mtimeOf(Number(mtime ?? 0)), hashes];
        if (Number(size) !== length) this.opts.logger.debug({ path: e.path }, "a file changed while it was read; the next snapshot reads it again");
        entries.push(entry);
        // A file that changed while read gets an empty key: the next scan reads it again.
        files.set(e.path, [Number(size) === length ? e.key : "", entry]);
        bytes += length;
        count++;
      }
    }
    if (bytes > this.opts.quotaBytes) {
      await this.chunks.flush().catch(() => undefined);
      throw new MhError(
        "RESOURCE_EXHAUSTED",
        `the workspace holds ${(bytes / MiB).toFixed(1)} MiB, over its quota of ${(this.opts.quotaBytes / MiB).toFixed(1)} MiB (MH_WORKSPACE_MAX_BYTES): not saved`,
      );
    }
    await this.chunks.flush();
    const serialised = JSON.stringify(entries);
    if (base !== undefined && base.sessionId === info.sessionId && base.entries === serialised) {
      this.bases.set(info.sandboxId, { sessionId: info.sessionId, files, entries: serialised });
      return { kind: "unchanged", ms: performance.now() - started };
    }
    const seq = (await this.lastSeqOf(info.sessionId)) + 1;
    const manifest: Manifest = {
      session: info.sessionId,
      seq,
      sandbox: info.sandboxId,
      call: info.callId,
      eventSeq: info.eventSeq,
      at: new Date().toISOString(),
      bytes,
      files: count,
      entries,
    };
    const stored = await encode(manifest, async (block) => {
      const { hash, added } = await this.chunks.add(block);
      addedBytes += added;
      return hash;
    });
    await this.chunks.flush();
    await this.store.put(manifestKey(info.sessionId, seq), stored);
    this.lastSeq.set(info.sessionId, seq);
    this.bases.set(info.sandboxId, { sessionId: info.sessionId, files, entries: serialised });
    return { kind: "saved", seq, bytes, addedBytes, ms: performance.now() - started };
  }

  /** The seqs of a session's snapshots, oldest first. */
  async seqs(sessionId: string): Promise<number[]> {
    const listed = await this.store.list(`sessions/${sessionId}/`);
    return listed.flatMap((o) => {
      const seq = seqOfKey(o.key);
      return seq === undefined ? [] : [seq];
    });
  }

  private async lastSeqOf(sessionId: string): Promise<number> {
    const cached = this.lastSeq.get(sessionId);
    if (cached !== undefined) return cached;
    const seqs = await this.seqs(sessionId);
    return seqs.at(-1) ?? 0;
  }

  /**
   * Restores the newest good snapshot of `source` into an empty workspace and makes it the
   * sandbox's base (with `sessionId` as its session: a fork's next snapshot is its own session's).
   * Undefined when there is none; seq 0 when none restores (each named in `skipped`); throws
   * UNAVAILABLE when the store cannot be read.
   */
  async restore(target: SandboxProcess, sandboxId: string, sessionId: string, source: RestoreSource): Promise<RestoreResult | undefined> {
    const started = performance.now();
    const skipped: string[] = [];
    const seqs = (await this.seqs(source.sessionId)).reverse();
    if (source.sessionId === sessionId && seqs[0] !== undefined) this.lastSeq.set(sessionId, Math.max(seqs[0], this.lastSeq.get(sessionId) ?? 0));
    let candidates = 0;
    for (const seq of seqs) {
      const key = manifestKey(source.sessionId, seq);
      const bytes = await this.store.get(key);
      if (bytes === undefined) {
        skipped.push(`snapshot ${key} is missing`);
        continue;
      }
      const manifest = await this.decode(bytes);
      if (typeof manifest === "string") {
        skipped.push(`snapshot ${key} is corrupt: ${manifest}`);
        continue;
      }
      if (source.atEventSeq !== undefined && (manifest.eventSeq === 0 || manifest.eventSeq > source.atEventSeq)) continue;
      candidates++;
      try {
        const files = await this.write(target, manifest);
        this.bases.set(sandboxId, { sessionId, files, entries: source.sessionId === sessionId ? JSON.stringify(manifest.entries) : "" });
        return { sessionId: source.sessionId, seq, callId: manifest.call, files: manifest.files, bytes: manifest.bytes, ms: performance.now() - started, skipped };
      } catch (err) {
        if (!(err instanceof BadChunkError)) throw err;
        skipped.push(`snapshot ${key} is corrupt: ${err.message}`);
        await clearWorkspace(target);
      }
    }
    if (skipped.length === 0) return undefined;
    // Every snapshot was bad: the sandbox starts empty, and the caller names them.
    this.opts.logger.warn({ session_id: source.sessionId, skipped, candidates }, "no snapshot restores");
    return { sessionId: source.sessionId, seq: 0, callId: "", files: 0, bytes: 0, ms: performance.now() - started, skipped };
  }

  /** A stored manifest with its listing read (manifest.ts), or why it is corrupt; throws when the store cannot be read. */
  decode(bytes: Buffer, getBlock: (hash: string) => Promise<Buffer> = (h) => this.chunks.get(h)): Promise<Decoded | string> {
    return decode(bytes, getBlock, (err) => err instanceof BadChunkError);
  }

  /** Writes a manifest's entries into the workspace; returns the new base's files. */
  private async write(target: SandboxProcess, manifest: Manifest): Promise<Map<string, readonly [string, Entry]>> {
    const run = await HelperRun.start(target, "restore");
    const byPath = new Map<string, Entry>();
    const keys = new Map<string, string>();
    // Its answers are read as they come, so a full pipe never stalls the writes.
    const answers = (async () => {
      for (;;) {
        const type = (await run.field()).toString("utf8");
        if (type === "Z") return;
        const path = (await run.field()).toString("utf8");
        keys.set(path, (await run.field()).toString("utf8"));
      }
    })();
    answers.catch(() => undefined);
    try {
      const files = manifest.entries.filter((e): e is Extract<Entry, readonly ["f", ...unknown[]]> => e[0] === "f");
      const chunks = this.chunks.read(files.flatMap((f) => f[5]))[Symbol.asyncIterator]();
      for (const e of manifest.entries) {
        if (e[0] === "d") await run.write(fields("d", e[1].toString(8), e[2]));
        else if (e[0] === "l") await run.write(fields("l", e[1], e[2]));
        else {
          byPath.set(e[2], e);
          await run.write(fields("F", e[1].toString(8), e[2], String(e[4])));
          for (let i = 0; i < e[5].length; i++) {
            const next = await chunks.next();
            if (next.done === true) throw new BadChunkError("the chunk list ended early");
            await run.write(fields(next.value));
          }
          const end = Buffer.alloc(4);
          await run.write(end);
        }
      }
      await run.write(fields("Z"));
      run.endInput();
      await answers;
      await run.done();
    } catch (err) {
      run.kill();
      throw err;
    }
    const out = new Map<string, readonly [string, Entry]>();
    for (const [path, entry] of byPath) out.set(path, [keys.get(path) ?? "", entry]);
    return out;
  }
}
