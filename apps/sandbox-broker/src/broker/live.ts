/**
 * The sandboxes this broker process runs now, and the one way any of them ends: `end()` stops the
 * runtime, records RELEASED or LOST with its reason in Postgres, tells the session's log, and
 * forgets it, once, whoever asks first (a Release, the reaper, shutdown, or the sandbox dying).
 */
import type { Queryable } from "@metaharness/db";
import { MhError } from "@metaharness/errors";
import { SandboxState } from "@metaharness/proto";
import type { Logger } from "@metaharness/service-kit/logging";
import { endSandbox } from "../db/sandboxes.js";
import type { SandboxEventSink } from "../events/sink.js";
import type { SandboxRemotes } from "../remotes/attach.js";
import type { Limits } from "../resources.js";
import type { SandboxRuntime } from "../runtime.js";
import { BUBBLEWRAP_DRIVER } from "../driver/local-sandbox.js";
import { sandboxesActive, sandboxLost, type LossCause } from "../metrics.js";

/** A sandbox revived under its old id (revive.ts), and what its call's result says about it. */
export interface Revived {
  readonly live: LiveSandbox;
  /** Put before the call's output ("" after a pause that restored cleanly). */
  readonly note: string;
  /** Set when the restore went wrong (a snapshot skipped, the store down): the call does not run. */
  readonly error?: string;
}

export interface LiveSandbox {
  readonly id: string;
  sessionId: string;
  readonly runtime: SandboxRuntime;
  readonly limits: Limits;
  readonly createdAt: number;
  lastUsedAt: number;
  /** Its git and egress relays and remotes, closed once it has ended; set by Provision or AddRepositories. */
  remotes?: SandboxRemotes | undefined;
  /** Set when it started ending: calls arriving now are told why. */
  ended?: { readonly state: SandboxState; readonly reason: string };
}

export type EndState = SandboxState.SANDBOX_STATE_RELEASED | SandboxState.SANDBOX_STATE_LOST;

/** The sentence the model reads about a sandbox that has ended. */
export function endedMessage(sandboxId: string, state: SandboxState, reason: string): string {
  return `sandbox ${sandboxId} was ${state === SandboxState.SANDBOX_STATE_LOST ? "lost" : "released"}: ${reason}`;
}

export class LiveSandboxes {
  private readonly sandboxes = new Map<string, LiveSandbox>();
  private readonly ending = new Map<string, Promise<void>>();
  /** Places under the cap held by Provisions still under way. */
  private reserved = 0;

  constructor(
    private readonly deps: {
      readonly pool: Queryable;
      readonly events: SandboxEventSink;
      readonly logger: Logger;
      /** Told whenever a place under the cap frees up (a sandbox ended, a reservation ended). */
      readonly onRoom?: () => void;
      /** Told when a sandbox has ended (its workspace's snapshot base can go). */
      readonly onEnded?: (id: string) => void;
    },
  ) {}

  add(sandbox: LiveSandbox): void {
    this.sandboxes.set(sandbox.id, sandbox);
    sandboxesActive.add(1, { kind: sandbox.runtime.driver });
    const cause = sandbox.runtime.driver === BUBBLEWRAP_DRIVER ? "crashed" : "hand_gone";
    void sandbox.runtime.lost.then((reason) => this.end(sandbox.id, SandboxState.SANDBOX_STATE_LOST, reason, cause));
  }

  get(id: string): LiveSandbox | undefined {
    return this.sandboxes.get(id);
  }

  all(): LiveSandbox[] {
    return [...this.sandboxes.values()];
  }

  get size(): number {
    return this.sandboxes.size;
  }

  /** Sandboxes running, and being provisioned: what the cap (MH_MAX_SANDBOXES) counts. */
  get committed(): number {
    return this.sandboxes.size + this.reserved;
  }

  /**
   * Holds one place under the cap of `max` for a sandbox being provisioned, from before its
   * runtime starts (or is taken from the warm pool) until it is live or has failed; returns the
   * function that gives the place back. Without it, concurrent Provisions, and the warm pool's
   * refill, would all see the room the first one is about to fill. RESOURCE_EXHAUSTED when full.
   */
  reserve(max: number): () => void {
    if (this.committed >= max) {
      throw new MhError("RESOURCE_EXHAUSTED", `this broker runs ${max} sandboxes already (MH_MAX_SANDBOXES)`);
    }
    this.reserved++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.reserved--;
      this.deps.onRoom?.();
    };
  }

  /**
   * Ends sandbox `id` (idempotent; the first caller's state and reason win). `cause`: it ended
   * other than by a release or its session's end, counted in metaharness.sandbox.losses.
   */
  end(id: string, state: EndState, reason: string, cause?: LossCause): Promise<void> {
    const running = this.ending.get(id);
    if (running !== undefined) return running;
    const sandbox = this.sandboxes.get(id);
    if (sandbox === undefined) return Promise.resolve();
    if (cause !== undefined) sandboxLost(cause);
    const done = this.finish(sandbox, state, reason).finally(() => {
      sandboxesActive.add(-1, { kind: sandbox.runtime.driver });
      this.sandboxes.delete(id);
      this.ending.delete(id);
      this.deps.onEnded?.(id);
      this.deps.onRoom?.();
    });
    this.ending.set(id, done);
    return done;
  }

  /** Ends every sandbox (shutdown). */
  async endAll(state: EndState, reason: string): Promise<void> {
    await Promise.all(this.all().map((s) => this.end(s.id, state, reason)));
  }

  private async finish(sandbox: LiveSandbox, state: EndState, reason: string): Promise<void> {
    sandbox.ended = { state, reason };
    const log = this.deps.logger.child({ sandbox_id: sandbox.id, session_id: sandbox.sessionId });
    await sandbox.runtime.stop(reason);
    await sandbox.remotes?.detach().catch((err: unknown) => log.warn({ err }, "could not close the sandbox's remotes"));
    try {
      const changed = await endSandbox(this.deps.pool, sandbox.id, state, reason);
      if (!changed) return;
    } catch (err) {
      // Postgres is down: the row stays READY, and the next start of this broker marks it LOST.
      log.error({ err, state, reason }, "could not record the end of a sandbox");
      return;
    }
    if (state === SandboxState.SANDBOX_STATE_LOST) {
      log.warn({ reason }, "sandbox lost");
      this.deps.events.lost(sandbox.sessionId, sandbox.id, reason);
    } else {
      log.info({ reason }, "sandbox released");
      this.deps.events.released(sandbox.sessionId, sandbox.id, reason);
    }
  }
}
