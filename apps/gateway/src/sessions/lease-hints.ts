/**
 * What this gateway instance last heard of each session's lease: every append of user input
 * answers how long the lease has left (EmitEventsResponse.lease_left_ms), and the next send to
 * the session asks here whether a harness may still hold it. Only a hint, for choosing when to
 * send the Wake (sessions/append.ts): a session it does not know, or whose lease it last saw run
 * out by now, gets its Wake beside its append; the append's own answer still decides whether a
 * Wake follows it. Bounded: the sessions heard of longest ago are forgotten first.
 */
export const MAX_LEASE_HINTS = 10_000;
/**
 * How long after a Wake that a harness answered (it drives the session, or another holds it) the
 * session is taken to be held still: the harness's default linger (MH_IDLE_LINGER_MS, 2 s),
 * which follows even the shortest turn. The send's own append corrects it either way.
 */
export const WOKEN_HELD_MS = 2_000;

export class LeaseHints {
  /** The clock ms at which each session's lease runs out, by the last append's answer here; in the order heard. */
  private readonly until = new Map<string, number>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly max = MAX_LEASE_HINTS,
  ) {}

  /** An append's answer: the lease has `leaseLeftMs` left from now (0: none held). */
  heard(sessionId: string, leaseLeftMs: number): void {
    if (leaseLeftMs > 0) this.hold(sessionId, this.now() + leaseLeftMs);
    else this.until.delete(sessionId);
  }

  /** A Wake was answered: a harness drives the session (or another holds it) from now. */
  woke(sessionId: string): void {
    const until = this.now() + WOKEN_HELD_MS;
    if ((this.until.get(sessionId) ?? 0) < until) this.hold(sessionId, until);
  }

  /** Whether what was last heard says the lease still has more than `marginMs` left now. */
  heldBeyond(sessionId: string, marginMs: number): boolean {
    const until = this.until.get(sessionId);
    return until !== undefined && until - this.now() > marginMs;
  }

  /** Heard last, so forgotten last: the map's order is the order heard. */
  private hold(sessionId: string, until: number): void {
    this.until.delete(sessionId);
    this.until.set(sessionId, until);
    if (this.until.size > this.max) this.until.delete(this.until.keys().next().value as string);
  }
}
