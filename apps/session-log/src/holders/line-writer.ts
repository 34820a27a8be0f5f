/**
 * Writes freed session ids to one holder's line: one message in flight at a time, carrying
 * everything announced meanwhile, and a bounded backlog (a holder that stops reading loses
 * announcements, counted once in the log: its sweeps find those sessions anyway).
 */
import type { HoldLeasesResponse } from "@metaharness/proto";
import type { ServerStreamWriter } from "@metaharness/service-kit/grpc";
import type { Logger } from "@metaharness/service-kit/logging";

/** Ids waiting for a slow line beyond this are dropped: an announcement only saves a sweep period. */
export const MAX_PENDING_IDS = 10_000;
/** Ids per message: far below any message limit (an id is 31 bytes). */
const MAX_IDS_PER_MESSAGE = 1000;

export class LineWriter {
  private pending: string[] = [];
  private writing = false;
  private dropped = 0;

  constructor(
    private readonly stream: ServerStreamWriter<HoldLeasesResponse>,
    private readonly logger: Logger,
  ) {}

  push(sessionIds: readonly string[]): void {
    const room = MAX_PENDING_IDS - this.pending.length;
    if (room < sessionIds.length) this.dropped += sessionIds.length - Math.max(0, room);
    this.pending.push(...sessionIds.slice(0, Math.max(0, room)));
    if (!this.writing) void this.flush();
  }

  private async flush(): Promise<void> {
    this.writing = true;
    try {
      while (this.pending.length > 0 && !this.stream.signal.aborted) {
        await this.stream.write({ freedSessionIds: this.pending.splice(0, MAX_IDS_PER_MESSAGE) });
      }
    } catch {
      // The line ended: its holder is gone, and HolderLines frees what it held.
      this.pending = [];
    } finally {
      this.writing = false;
      if (this.dropped > 0) {
        this.logger.warn({ dropped: this.dropped }, "a holder's line fell behind; freed sessions not announced to it");
        this.dropped = 0;
      }
    }
  }
}
