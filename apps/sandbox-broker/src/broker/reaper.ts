/**
 * Ends sandboxes that outstayed their welcome: idle (no call running, none for idle_timeout
 * seconds) or old (lifetime over, busy or not). Both are releases on purpose, recorded as
 * RELEASED with the reason, as the sandbox.released event documents ("idle timeout, end of
 * life"); a call to the sandbox afterwards reads that reason. With workspace snapshots, an idle
 * local sandbox is paused instead: released after a last snapshot, and resumed by its next call.
 */
import { SandboxState } from "@metaharness/proto";
import type { LiveSandbox, LiveSandboxes } from "./live.js";
import type { LossCause } from "../metrics.js";

export class Reaper {
  private timer: NodeJS.Timeout | undefined;

  /** Sandboxes being paused, which the next passes leave alone. */
  private readonly pausing = new Set<string>();

  constructor(
    /** What of the live set it uses: its sandboxes, and ending one. */
    private readonly live: Pick<LiveSandboxes, "all" | "end">,
    private readonly intervalMs: number,
    /**
     * With workspace snapshots: an idle local sandbox is paused (snapshotted, then released, and
     * resumed by its next call; broker/workspace.ts) instead of released. Returns false for a
     * sandbox it does not pause.
     */
    private readonly pause?: (sandbox: LiveSandbox) => Promise<void> | false,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => this.sweep(Date.now()), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One pass at time `now` (its only clock: tests pass their own times); returns how many sandboxes it ended. */
  sweep(now: number): number {
    let ended = 0;
    for (const s of this.live.all()) {
      if (s.ended !== undefined) continue;
      const { lifetimeSeconds, idleTimeoutSeconds } = s.limits;
      let reason: string | undefined;
      let cause: LossCause = "lifetime";
      if (now - s.createdAt >= lifetimeSeconds * 1000) {
        reason = `its lifetime of ${lifetimeSeconds} s is over`;
      } else if (s.runtime.inFlight === 0 && now - s.lastUsedAt >= idleTimeoutSeconds * 1000) {
        if (this.pausing.has(s.id)) continue;
        const pausing = this.pause?.(s);
        if (pausing !== undefined && pausing !== false) {
          ended++;
          this.pausing.add(s.id);
          void pausing.finally(() => this.pausing.delete(s.id));
          continue;
        }
        reason = `idle for ${idleTimeoutSeconds} s (its idle timeout)`;
        cause = "idle_timeout";
      }
      if (reason === undefined) continue;
      ended++;
      void this.live.end(s.id, SandboxState.SANDBOX_STATE_RELEASED, reason, cause);
    }
    return ended;
  }
}
