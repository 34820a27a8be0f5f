/**
 * Releases the sandboxes of sessions that ended. Deleting a session terminates it in the log, and
 * nothing else tells the broker: its sandbox would run on, holding its share of CPU and memory,
 * until its idle timeout (15 minutes by default). Every `intervalMs` this asks the log about each
 * session that holds a sandbox here, and ends the sandboxes of those terminated or unknown to
 * it. A log that cannot answer ends nothing; the next pass asks again.
 */
import { SandboxState } from "@metaharness/proto";
import type { Logger } from "@metaharness/service-kit/logging";
import { untraced } from "@metaharness/telemetry";
import type { SandboxEventSink } from "../events/sink.js";
import type { LiveSandboxes } from "./live.js";

/** Sessions asked about at once: a pass over many sessions neither crawls nor floods the log. */
const CONCURRENCY = 8;

export class SessionEnds {
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<number> | undefined;
  private stopped = false;

  constructor(
    private readonly live: LiveSandboxes,
    private readonly log: Pick<SandboxEventSink, "sessionEnded">,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.stopped = false;
    this.timer ??= setInterval(() => void this.sweep(), this.intervalMs);
    this.timer.unref();
  }

  /** Asks no more sessions, and waits only for the questions already out. */
  async stop(): Promise<void> {
    this.stopped = true;
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
    // A pooled sandbox belongs to no session yet.
    const sessions = [...new Set(this.live.all().flatMap((s) => (s.ended === undefined && s.sessionId !== "" ? [s.sessionId] : [])))];
    let ended = 0;
    const next = async (): Promise<void> => {
      for (let sessionId = sessions.shift(); sessionId !== undefined && !this.stopped; sessionId = sessions.shift()) {
        // A question per live session every few seconds: not a trace of its own each time.
        if ((await untraced(() => this.log.sessionEnded(sessionId))) === true) ended += this.endSandboxesOf(sessionId);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, next));
    return ended;
  }

  /**
   * Ends the sandboxes the session holds now: one transferred to another session while the log
   * was asked is no longer its to lose.
   */
  private endSandboxesOf(sessionId: string): number {
    const ids = this.live.all().flatMap((s) => (s.ended === undefined && s.sessionId === sessionId ? [s.id] : []));
    if (ids.length === 0) return 0;
    this.logger.info({ session_id: sessionId, sandboxes: ids }, "releasing the sandboxes of an ended session");
    for (const id of ids) void this.live.end(id, SandboxState.SANDBOX_STATE_RELEASED, "its session ended");
    return ids.length;
  }
}
