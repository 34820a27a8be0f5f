/**
 * Holders' lines to the log (HoldLeases): each harness keeps one open for as long as it lives.
 * A kill -9 closes the dead process's connections at once (the kernel sends FIN or RST), grpc-js
 * then cancels its calls, and when the last line of a holder ends its leases are freed there and
 * then instead of at their expiry, so recovery does not wait out a TTL. Every line then hears of
 * the freed sessions that need a harness, as of leases given back while their session still
 * needs one (a harness shutting down), so that a live harness takes them over at once instead of
 * at its next sweep. Other instances of the log hear of them through NOTIFY on LEASES_CHANNEL.
 * Expiry stays the fallback: a holder that hangs, or is cut off with its connection still open,
 * keeps its line and loses its leases when they expire; the epoch fences it either way.
 */
import type { Db } from "@metaharness/db";
import { NotifyBatcher, ResilientListener } from "@metaharness/db";
import { MhError } from "@metaharness/errors";
import type { HoldLeasesResponse } from "@metaharness/proto";
import type { ServerStreamWriter } from "@metaharness/service-kit/grpc";
import type { Logger } from "@metaharness/service-kit/logging";
import { freeLeasesOf } from "../store/leases.js";
import { LineWriter } from "./line-writer.js";

/** The channel freed sessions are announced on: items are session ids (see NotifyPayloads). */
export const LEASES_CHANNEL = "mh_leases";

export class HolderLines {
  /** Open lines per holder: a holder is gone when its last one ends. */
  private readonly open = new Map<string, number>();
  private readonly writers = new Set<LineWriter>();
  private readonly batcher: NotifyBatcher;
  private readonly listener: ResilientListener;
  private closing = false;
  private readonly ended: Promise<void>;
  private end: () => void = () => undefined;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
  ) {
    this.ended = new Promise((resolve) => (this.end = resolve));
    this.batcher = new NotifyBatcher(db, LEASES_CHANNEL, logger);
    // Announcements missed while the LISTEN connection was down are not replayed: the harnesses'
    // sweeps find those sessions (a sweep period later, as before the lines).
    this.listener = new ResilientListener(
      db,
      LEASES_CHANNEL,
      (payload) => {
        const items = this.batcher.parse(payload);
        if (items !== undefined) this.deliver(items.filter((id) => id !== ""));
      },
      () => undefined,
      logger,
    );
  }

  start(): Promise<void> {
    return this.listener.start();
  }

  /**
   * The log is stopping: lines end now (their holders live on, and open them again on the next
   * instance), and a line ending from here on frees nothing.
   */
  close(): void {
    this.closing = true;
    this.end();
  }

  async stop(): Promise<void> {
    this.close();
    await this.batcher.flush();
    await this.listener.stop();
  }

  /** Serves one line until its holder goes (the call is cancelled) or the log stops. */
  async hold(holder: string, stream: ServerStreamWriter<HoldLeasesResponse>): Promise<void> {
    if (this.closing) throw new MhError("UNAVAILABLE", "the session log is shutting down");
    this.open.set(holder, (this.open.get(holder) ?? 0) + 1);
    const writer = new LineWriter(stream, this.logger);
    try {
      // Held from here: the first message tells the holder its leases are now tied to this line.
      await stream.write({ freedSessionIds: [] });
      this.writers.add(writer);
      await Promise.race([this.ended, cancelled(stream.signal)]);
    } catch {
      // The write failed: the call is gone already, which is what the finally block handles.
    } finally {
      this.writers.delete(writer);
      const left = (this.open.get(holder) ?? 1) - 1;
      if (left > 0) this.open.set(holder, left);
      else this.open.delete(holder);
      if (left === 0 && !this.closing) await this.freeAll(holder);
    }
  }

  /** Sessions whose lease became free while they need a harness: every line hears of them. */
  announce(sessionIds: readonly string[]): void {
    if (sessionIds.length === 0) return;
    this.deliver(sessionIds);
    for (const id of sessionIds) this.batcher.enqueue(id);
  }

  private async freeAll(holder: string): Promise<void> {
    try {
      const { freed, needHarness } = await freeLeasesOf(this.db, holder);
      if (freed > 0) this.logger.info({ holder, freed, need_harness: needHarness.length }, "holder's line ended; its leases freed");
      this.announce(needHarness);
    } catch (err) {
      // The database is away: the leases expire instead, as they did before the lines.
      this.logger.warn({ err, holder }, "could not free the leases of a holder whose line ended; they will expire");
    }
  }

  private deliver(sessionIds: readonly string[]): void {
    for (const w of this.writers) w.push(sessionIds);
  }
}

function cancelled(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}
