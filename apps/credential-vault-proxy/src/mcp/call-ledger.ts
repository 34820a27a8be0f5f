/**
 * CallMcpTool is idempotent by (session_id, call_id). A harness that dies after sending a call
 * but before writing its result leaves the session with a tool_use and no result; the harness
 * that takes over sends the same call again, and an MCP tool is often not safe to run twice (it
 * files an issue, sends a message). So every call is claimed in the ledger before it goes
 * upstream, and a repeat:
 * - of a finished call gets its recorded outcome (replayed; nothing is sent upstream);
 * - of a call this process is running waits for it and gets the same outcome;
 * - of a call another process is running polls the ledger until it finishes; a process touches
 *   its running calls every HEARTBEAT_MS, so one whose calls went silent for STALE_MS is taken for
 *   dead and the call settles as "outcome unknown", an error result the model can read and act
 *   on, never a second call.
 * Once sent upstream, a call is seen through to its end even if its caller goes away (a harness
 * that died cancels its gRPC call): the repeat gets the answer instead of making the call again.
 * Before it is sent, the caller's cancellation (a user's interrupt) still stops it.
 * An attempt that fails before it was sent (no credential, the server refused the token) is
 * forgotten, so it can be tried again; one that failed after it was sent (timeout, connection
 * lost) may or may not have taken effect, and is recorded as that.
 */
import { MhError } from "@metaharness/errors";
import type { Db } from "@metaharness/db";
import type { Logger } from "@metaharness/service-kit/logging";
import {
  claimMcpCall,
  finishMcpCall,
  releaseMcpCall,
  settleMcpCall,
  sweepMcpCalls,
  touchMcpCalls,
  type McpCallKey,
  type McpCallOutcome,
} from "../store/mcp-calls.js";

export const UNKNOWN_OUTCOME =
  "the outcome of this MCP call is unknown: the proxy that made it stopped before it answered; check before calling again";
/** Failures after the call was sent that leave its effect unknown (the rest are refusals). */
const UNKNOWN_AFTER_SEND = new Set(["DEADLINE_EXCEEDED", "UNAVAILABLE", "INTERNAL", "UNKNOWN", "CANCELLED", "ABORTED"]);
const POLL_MS = 200;
/** How often a process marks the calls it runs as alive. */
const HEARTBEAT_MS = 2_000;
/** A running call not touched for this long belongs to a process that died. */
const STALE_MS = 15_000;
const SWEEP_EVERY_MS = 10 * 60_000;

export interface LedgerCall extends McpCallKey {
  readonly serverUrl: string;
  readonly name: string;
}

export interface LedgerAnswer {
  readonly outcome: McpCallOutcome;
  readonly replayed: boolean;
}

/** Makes the call upstream; calls `sent` just before the request leaves. */
export type Attempt = (signal: AbortSignal, sent: () => void) => Promise<McpCallOutcome>;

export class McpCallLedger {
  /** This process's attempts under way, with the call they make (a call_id names one call). */
  private readonly inflight = new Map<string, { readonly call: LedgerCall; readonly outcome: Promise<McpCallOutcome> }>();
  private lastSweep = 0;
  /** Aborts the attempts still running when the proxy stops. */
  private readonly stopping = new AbortController();
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: {
      readonly db: Db;
      /** This process, as the ledger names it: random per start. */
      readonly owner: string;
      readonly retentionMs: number;
      readonly logger: Logger;
    },
  ) {}

  /** The call's outcome; `signal` ends the wait (CANCELLED), never an attempt already under way. */
  async run(call: LedgerCall, signal: AbortSignal, attempt: Attempt): Promise<LedgerAnswer> {
    this.sweepNow();
    const mapKey = `${call.sessionId}\u0000${call.callId}`;
    for (;;) {
      signal.throwIfAborted();
      const mine = this.inflight.get(mapKey);
      if (mine !== undefined) {
        if (mine.call.name !== call.name || mine.call.serverUrl !== call.serverUrl) throw reused(call, mine.call.name, mine.call.serverUrl);
        return { outcome: await untilAborted(mine.outcome, signal), replayed: true };
      }
      const claim = await this.claim(call);
      switch (claim.kind) {
        case "claimed":
          return { outcome: await untilAborted(this.attempt(call, mapKey, signal, attempt), signal), replayed: false };
        case "done":
          return { outcome: claim.outcome, replayed: true };
        case "other":
          throw reused(call, claim.name, claim.serverUrl);
        case "running": {
          if (claim.silentMs > STALE_MS) {
            const settled = await settleMcpCall(this.deps.db, call, claim.owner, { text: [UNKNOWN_OUTCOME], isError: true });
            if (settled !== undefined) {
              this.deps.logger.warn({ session_id: call.sessionId, call_id: call.callId, owner: claim.owner }, "mcp call of a dead proxy settled as unknown");
              return { outcome: settled, replayed: true };
            }
            continue; // released meanwhile: claim it again
          }
          await sleep(POLL_MS, signal);
        }
      }
    }
  }

  private async claim(call: LedgerCall) {
    for (let i = 0; i < 3; i++) {
      const claim = await claimMcpCall(this.deps.db, call, { serverUrl: call.serverUrl, name: call.name, owner: this.deps.owner });
      if (claim !== undefined) return claim;
    }
    throw new MhError("INTERNAL", `call ${call.callId} of session ${call.sessionId} could be neither claimed nor read`);
  }

  /**
   * Runs the attempt to its end, whoever waits for it, and records what came of it. The caller's
   * `signal` stops it only until it is sent; the proxy stopping stops it at any point.
   */
  private attempt(call: LedgerCall, mapKey: string, signal: AbortSignal, attempt: Attempt): Promise<McpCallOutcome> {
    let sent = false;
    const stop = new AbortController();
    const onStopping = (): void => stop.abort(this.stopping.signal.reason);
    const onCancel = (): void => {
      if (!sent) stop.abort(signal.reason);
    };
    this.stopping.signal.addEventListener("abort", onStopping, { once: true });
    signal.addEventListener("abort", onCancel, { once: true });
    const running = (async () => {
      let outcome: McpCallOutcome;
      try {
        outcome = await attempt(stop.signal, () => (sent = true));
      } catch (err) {
        const e = MhError.from(err);
        if (!sent || !UNKNOWN_AFTER_SEND.has(e.code)) {
          await releaseMcpCall(this.deps.db, call, this.deps.owner);
          throw err;
        }
        outcome = { text: [`the MCP call was sent but got no answer (${e.code}: ${e.message}); it may or may not have taken effect`], isError: true };
      } finally {
        this.stopping.signal.removeEventListener("abort", onStopping);
        signal.removeEventListener("abort", onCancel);
      }
      await finishMcpCall(this.deps.db, call, this.deps.owner, outcome);
      return outcome;
    })();
    this.inflight.set(mapKey, { call, outcome: running });
    this.beat();
    running.catch(() => undefined); // its waiters handle the rejection
    void running.finally(() => this.inflight.delete(mapKey)).catch(() => undefined);
    return running;
  }

  /** Touches this process's running calls every HEARTBEAT_MS while it has any. */
  private beat(): void {
    if (this.heartbeat !== undefined) return;
    this.heartbeat = setInterval(() => {
      if (this.inflight.size === 0) {
        clearInterval(this.heartbeat);
        this.heartbeat = undefined;
        return;
      }
      touchMcpCalls(this.deps.db, this.deps.owner).catch((err: unknown) =>
        this.deps.logger.warn({ err }, "could not mark running mcp calls as alive"),
      );
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  /**
   * For the proxy's shutdown: aborts the attempts still running and waits until each is recorded
   * (unknown once sent) or forgotten, before the database closes.
   */
  async close(): Promise<void> {
    this.stopping.abort(new MhError("UNAVAILABLE", "the credential vault proxy is stopping"));
    await Promise.allSettled([...this.inflight.values()].map((m) => m.outcome));
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  /** Forgets old calls now and then, in the background. */
  private sweepNow(): void {
    const now = Date.now();
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    sweepMcpCalls(this.deps.db, this.deps.retentionMs).then(
      (n) => {
        if (n > 0) this.deps.logger.info({ deleted: n }, "old mcp call records deleted");
      },
      (err: unknown) => this.deps.logger.warn({ err }, "could not delete old mcp call records"),
    );
  }
}

/** `promise`, or CANCELLED as soon as `signal` aborts (the promise goes on). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(MhError.from(signal.reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(MhError.from(signal.reason));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err instanceof Error ? err : MhError.from(err));
      },
    );
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(MhError.from(signal.reason));
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** A call_id names one call: the same id for another tool or server is refused, whether that call is done or under way. */
function reused(call: LedgerCall, name: string, serverUrl: string): MhError {
  return new MhError("FAILED_PRECONDITION", `call_id ${call.callId} was already used in session ${call.sessionId} for ${name} on ${serverUrl}`, {
    field: "call_id",
  });
}
