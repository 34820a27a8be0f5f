/**
 * Retention: a session's snapshots go when the session is deleted (the log then reports it
 * terminated, or does not know it), and with them every chunk (file content or listing block) no
 * other snapshot uses. Every
 * `intervalMs` the log is asked about each session that has snapshots; a log that cannot answer
 * deletes nothing. Chunks younger than GRACE_MS are kept even when unused: a snapshot being taken
 * writes its chunks before its manifest.
 */
import type { Logger } from "@metaharness/service-kit/logging";
import { untraced } from "@metaharness/telemetry";
import type { SandboxEventSink } from "../events/sink.js";
import type { BlobStore } from "./blob-store.js";
import { BadChunkError, chunkKey } from "./chunks.js";
import { chunksOf, decode } from "./manifest.js";

export const GRACE_MS = 60 * 60_000;

export interface CollectResult {
  readonly deletedChunks: number;
  readonly deletedBytes: number;
}

export class Retention {
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<void> | undefined;

  constructor(
    private readonly store: BlobStore,
    private readonly log: Pick<SandboxEventSink, "sessionEnded">,
    private readonly opts: { readonly intervalMs: number; readonly logger: Logger; readonly forget: (hashes: Iterable<string>) => void },
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.sweep(), this.opts.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.pass;
  }

  /** One pass (never two at once): the snapshots of ended sessions go, then unused chunks. */
  sweep(): Promise<void> {
    this.pass ??= this.check()
      .catch((err: unknown) => this.opts.logger.warn({ err }, "workspace retention pass failed; the next one tries again"))
      .finally(() => (this.pass = undefined));
    return this.pass;
  }

  private async check(): Promise<void> {
    const sessions = new Set((await this.store.list("sessions/")).map((o) => o.key.split("/")[1] ?? ""));
    let deleted = 0;
    for (const sessionId of sessions) {
      if (sessionId === "") continue;
      if ((await untraced(() => this.log.sessionEnded(sessionId))) !== true) continue;
      await this.deleteSession(sessionId);
      deleted++;
    }
    if (deleted > 0) await this.collect(Date.now() - GRACE_MS);
  }

  /** Deletes every snapshot of a session (its chunks go at the next collect). */
  async deleteSession(sessionId: string): Promise<number> {
    const keys = (await this.store.list(`sessions/${sessionId}/`)).map((o) => o.key);
    await this.store.delete(keys);
    this.opts.logger.info({ session_id: sessionId, snapshots: keys.length }, "deleted the snapshots of an ended session");
    return keys.length;
  }

  /** Deletes the chunks no snapshot uses, last written before `before` (ms since the epoch). */
  async collect(before: number): Promise<CollectResult> {
    const used = new Set<string>();
    // Manifests of one repository share their listing's blocks: each is read once a pass.
    const blocks = new Map<string, Buffer>();
    const getBlock = async (hash: string): Promise<Buffer> => {
      const bytes = blocks.get(hash) ?? (await this.store.get(chunkKey(hash)));
      if (bytes === undefined) throw new BadChunkError(`chunk ${hash} is missing`);
      blocks.set(hash, bytes);
      return bytes;
    };
    for (const o of await this.store.list("sessions/")) {
      const bytes = await this.store.get(o.key);
      if (bytes === undefined) continue;
      const manifest = await decode(bytes, getBlock, (err) => err instanceof BadChunkError);
      // A manifest that does not decode keeps nothing alive: it restores nothing either.
      if (typeof manifest === "string") continue;
      for (const h of manifest.blocks) used.add(h);
      for (const e of manifest.entries) for (const h of chunksOf(e)) used.add(h);
    }
    const unused = (await this.store.list("chunks/")).filter((o) => {
      const hash = o.key.split("/").pop() ?? "";
      return !used.has(hash) && o.key === chunkKey(hash) && o.modifiedAt.getTime() < before;
    });
    await this.store.delete(unused.map((o) => o.key));
    this.opts.forget(unused.map((o) => o.key.split("/").pop() ?? ""));
    return { deletedChunks: unused.length, deletedBytes: unused.reduce((n, o) => n + o.size, 0) };
  }
}
