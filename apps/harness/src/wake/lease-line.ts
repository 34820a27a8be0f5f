/**
 * This instance's line to the session log (HoldLeases), open for as long as it lives. While it
 * is open the log ties this instance's leases to it: when the process dies (kill -9 included:
 * the kernel closes its connections) the log frees them at once, and another harness takes its
 * sessions over without waiting for their TTL to run out. Through the same line the log names
 * the sessions whose lease became free while they need a harness (their holder died, or gave
 * them back shutting down): they are woken here at once (MH_WAKE_FREED), not at the next sweep.
 * The lease keeper's renewals and the TTL stay: they cover a holder that hangs or is cut off
 * without its connection closing. A line that breaks (the log restarted) is opened again.
 */
import { MhError, backoffMs, retryPolicy, sleep } from "@metaharness/errors";
import type { Logger } from "@metaharness/service-kit/logging";
import { untraced } from "@metaharness/telemetry";
import type { SessionLogClient } from "../log-port.js";
import type { Supervisor } from "../supervisor.js";

/**
 * Every instance hears of a freed session at once, and the first to ask takes it: without a
 * handicap one instance ended up with all nine sessions of test/bench/recovery.ts, and its death
 * left one successor to resume all nine at once (next event 4 s after the kill, against 1 s
 * for the others). An instance waits this long per session it drives before it asks, so the
 * least busy one usually wins.
 */
const WAIT_PER_SESSION_MS = 20;
const MAX_WAIT_MS = 200;
/** A broken line is opened again after 50 ms, doubling per break in a row (nothing held in between) up to 2 s; for the process's life. */
const REOPEN = retryPolicy({ initialIntervalMs: 50, maxIntervalMs: 2_000, jitter: 0, maxAttempts: Number.POSITIVE_INFINITY });

export class LeaseLine {
  private readonly controller = new AbortController();
  private running: Promise<void> | undefined;
  private heldOnce: () => void = () => undefined;
  /** Resolves once the log said the line is held (the first time). */
  readonly held: Promise<void> = new Promise((resolve) => (this.heldOnce = resolve));

  constructor(
    private readonly log: SessionLogClient,
    private readonly supervisor: Supervisor,
    private readonly opts: { readonly wakeFreed: boolean },
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.running ??= this.keep();
  }

  /** Closes the line: the log then frees whatever this instance still holds. */
  async stop(): Promise<void> {
    this.controller.abort(new MhError("CANCELLED", "harness stopping"));
    await this.running;
  }

  private async keep(): Promise<void> {
    const { signal } = this.controller;
    let failures = 0;
    /** Opens in a row that the log never answered on: the backoff grows with them. */
    let unheld = 0;
    while (!signal.aborted) {
      unheld += 1;
      try {
        // Open for the process's life: no deadline, and not a trace (the wakes it leads to are).
        const line = untraced(() => this.log.holdLeases({ holder: this.supervisor.instanceId }, { signal, deadlineMs: undefined }));
        for await (const { freedSessionIds } of line) {
          if (failures > 0) this.logger.info({ failures }, "lease line held again");
          failures = 0;
          unheld = 0;
          this.heldOnce();
          if (this.opts.wakeFreed) for (const sessionId of freedSessionIds) this.wake(sessionId);
        }
      } catch (err) {
        if (signal.aborted) return;
        // The log is restarting or away: say so once, then every 100th attempt, with a count.
        if (failures++ % 100 === 0) this.logger.warn({ err, failures }, "lease line broken; opening it again");
      }
      if (signal.aborted) return;
      await sleep(backoffMs(REOPEN, Math.max(1, unheld)), signal);
    }
  }

  private wake(sessionId: string): void {
    const waitMs = Math.min(MAX_WAIT_MS, this.supervisor.driving * WAIT_PER_SESSION_MS);
    const wake = (): void => {
      if (this.controller.signal.aborted) return;
      this.supervisor.wake(sessionId).catch((err: unknown) => {
        this.logger.warn({ err, sessionId }, "could not wake a session whose lease was freed");
      });
    };
    if (waitMs === 0) wake();
    else setTimeout(wake, waitMs).unref();
  }
}
