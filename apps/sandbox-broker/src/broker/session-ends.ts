/**
 * Releases the sandboxes of sessions that ended. Deleting a session terminates it in the log, and
 * nothing else tells the broker: its sandbox would run on, holding its share of CPU and memory,
 * until its idle timeout (15 minutes by default). Every `intervalMs` this asks the log about each
 * session that holds a sandbox here, and ends the sandboxes of those terminated or unknown to
 * it. A log that cannot answer ends nothing; the next pass asks again.
 */
import { SandboxState } from "@metaharness/proto";
import type { Logger } from "@metaharness/service-kit";
import type { SandboxEventSink } from "../events/sink.js";
import type { LiveSandboxes } from "./live.js";

export class SessionEnds {
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<number> | undefined;

  constructor(
    private readonly live: LiveSandboxes,
    private readonly log: Pick<SandboxEventSink, "sessionEnded">,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.sweep(), this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.pass;
  }

  /** One pass (never two at once); resolves to how many sandboxes it ended. */
  sweep(): Promise<number> {
    this.pass ??= this.check().finally(() => (this.pass = undefined));
    return this.pass;
  }

  private async check(): Promise<number> {
    const bySession = new Map<string, string[]>();
    for (const s of this.live.all()) {
      // A pooled sandbox belongs to no session yet.
      if (s.ended !== undefined || s.sessionId === "") continue;
      bySession.set(s.sessionId, [...(bySession.get(s.sessionId) ?? []), s.id]);
    }
    let ended = 0;
    for (const [sessionId, sandboxIds] of bySession) {
      if ((await this.log.sessionEnded(sessionId)) !== true) continue;
      this.logger.info({ session_id: sessionId, sandboxes: sandboxIds }, "releasing the sandboxes of an ended session");
      for (const id of sandboxIds) {
        ended++;
        void this.live.end(id, SandboxState.SANDBOX_STATE_RELEASED, "its session ended");
      }
    }
    return ended;
  }
}
