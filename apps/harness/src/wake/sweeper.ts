/**
 * Finds sessions that need a harness and have none (their harness hung or was cut off until its
 * lease expired, or a wake-up or the log's news of a freed lease was lost) and wakes them here.
 * A harness that dies is noticed at once through its line to the log (lease-line.ts); this is
 * the fallback. Every instance sweeps; the lease decides which one drives. The default lease TTL
 * (3 s) and sweep period (0.5 s) are chosen by test/bench/recovery.ts; its figures (kill -9 to
 * takeover and to the next event) are in docs/performance.md.
 */
import type { Logger } from "@metaharness/service-kit/logging";
import { untraced } from "@metaharness/telemetry";
import type { SessionLogClient } from "../log-port.js";
import type { Supervisor } from "../supervisor.js";

/** The most a stop waits for a sweep under way (its list call may wait up to its 5 s deadline on a log that does not answer). */
const STOP_WAIT_MS = 1000;

export class Sweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private failures = 0;

  constructor(
    private readonly log: SessionLogClient,
    private readonly supervisor: Supervisor,
    private readonly periodMs: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.schedule(0);
  }

  /** Stops sweeping; waits for a sweep under way, at most STOP_WAIT_MS (its wakes fail at once: the supervisor is stopping). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.running, new Promise((resolve) => (timer = setTimeout(resolve, STOP_WAIT_MS)))]);
    clearTimeout(timer);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.sweep().finally(() => this.schedule(this.periodMs));
    }, ms);
  }

  private async sweep(): Promise<void> {
    try {
      // Ten times a second on every instance: not a trace each time (the wakes it leads to are).
      const { sessions } = await untraced(() =>
        this.log.listSessions({ pageSize: 100, pageToken: "", tenant: "", status: 0, labels: {}, orphaned: true }, { deadlineMs: 5000 }),
      );
      if (this.failures > 0) this.logger.info({ failures: this.failures }, "orphan sweep works again");
      this.failures = 0;
      for (const s of sessions) {
        if (this.stopped) return;
        await this.supervisor.wake(s.sessionId).catch((err: unknown) => {
          this.logger.warn({ err, sessionId: s.sessionId }, "could not wake an orphaned session");
        });
      }
    } catch (err) {
      // The log is down or unreachable: say so once, then every 100th attempt, with a count.
      if (this.failures++ % 100 === 0) this.logger.warn({ err, failures: this.failures }, "orphan sweep failed");
    }
  }
}
