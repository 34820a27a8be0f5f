/**
 * Which sessions take token deltas: those that exist and have not ended. PublishDeltas comes many
 * times a second while a model streams, so the answer is kept: "live" for a short while (a
 * session that ends meanwhile gets a few more deltas, which are ephemeral and stored nowhere),
 * "terminated" until it falls out of the bounded table (a session never comes back from it). An
 * unknown session is not kept, so one created a moment later is taken at once. A termination
 * appended through this instance is known at once; one appended through another, within
 * DELTA_GATE_LIVE_MS. An append through this instance says the session is live, so the first
 * deltas of the answer to it cost no read (on the path to the first token).
 */
import type { Queryable } from "@metaharness/db";
import { MhError } from "@metaharness/errors";
import { SessionStatus } from "@metaharness/proto";
import { getSession } from "../store/sessions.js";

export const DELTA_GATE_LIVE_MS = 2000;
const MAX_KEPT = 10_000;

export class DeltaGate {
  private readonly kept = new Map<string, { readonly terminated: boolean; readonly until: number }>();

  constructor(
    private readonly db: Queryable,
    private readonly liveMs = DELTA_GATE_LIVE_MS,
  ) {}

  /** Called when this instance appended the session's termination. */
  terminated(sessionId: string): void {
    this.keep(sessionId, { terminated: true, until: Number.POSITIVE_INFINITY });
  }

  /**
   * Called when this instance appended to the session (not its termination): it exists and had not
   * ended, so its first deltas (the model's answer to what was just appended) need no read.
   */
  appended(sessionId: string): void {
    if (this.kept.get(sessionId)?.terminated === true) return;
    this.keep(sessionId, { terminated: false, until: Date.now() + this.liveMs });
  }

  /** NOT_FOUND for an unknown session, FAILED_PRECONDITION naming `session_id` for an ended one. */
  async check(sessionId: string): Promise<void> {
    let known = this.kept.get(sessionId);
    if (known === undefined || known.until <= Date.now()) {
      const { status } = await getSession(this.db, sessionId);
      const terminated = status === SessionStatus.SESSION_STATUS_TERMINATED;
      known = { terminated, until: terminated ? Number.POSITIVE_INFINITY : Date.now() + this.liveMs };
      this.keep(sessionId, known);
    }
    if (known.terminated) {
      throw new MhError("FAILED_PRECONDITION", `session ${sessionId} is terminated; it takes no deltas`, { field: "session_id" });
    }
  }

  private keep(sessionId: string, known: { readonly terminated: boolean; readonly until: number }): void {
    this.kept.delete(sessionId);
    if (this.kept.size >= MAX_KEPT) this.kept.delete(this.kept.keys().next().value ?? "");
    this.kept.set(sessionId, known);
  }
}
