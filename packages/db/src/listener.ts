/**
 * LISTEN on one channel that survives its connection: when the connection fails it reconnects
 * with capped backoff and calls `onReconnect`, so the owner can make up for what it may have
 * missed in between (NOTIFY is not queued for a listener that is gone); `onLost` as it goes.
 */
import { backoffMs, retryPolicy } from "@metaharness/errors";
import type { Logger } from "@metaharness/service-kit/logging";
import type { Db } from "./db.js";

/** A lost LISTEN connection is made again after 100 ms, doubling per failure in a row up to 5 s. */
const RECONNECT = retryPolicy({ initialIntervalMs: 100, maxIntervalMs: 5_000, jitter: 0, maxAttempts: Number.POSITIVE_INFINITY });

export class ResilientListener {
  private unlisten: (() => Promise<void>) | undefined;
  private stopped = false;
  /** Reconnects failed in a row. */
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly channel: string,
    private readonly onPayload: (payload: string) => void,
    private readonly onReconnect: () => void,
    private readonly logger: Logger,
    /** The connection was lost: nothing is heard until `onReconnect`. */
    private readonly onLost: () => void = () => undefined,
  ) {}

  async start(): Promise<void> {
    await this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    const unlisten = this.unlisten;
    this.unlisten = undefined;
    await unlisten?.();
  }

  private async connect(): Promise<void> {
    let lost = false;
    this.unlisten = await this.db.listen(this.channel, this.onPayload, (err) => {
      if (lost) return;
      lost = true;
      this.logger.warn({ err, channel: this.channel }, "lost the LISTEN connection; reconnecting");
      this.onLost();
      this.scheduleReconnect();
    });
    this.failures = 0;
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.timer !== undefined) return;
    const dead = this.unlisten;
    this.unlisten = undefined;
    dead?.().catch(() => undefined);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.connect()
        .then(() => {
          this.logger.info({ channel: this.channel }, "LISTEN reconnected");
          this.onReconnect();
        })
        .catch((err: unknown) => {
          this.logger.warn({ err, channel: this.channel }, "LISTEN reconnect failed");
          this.failures += 1;
          this.scheduleReconnect();
        });
    }, backoffMs(RECONNECT, this.failures + 1));
  }
}
