/**
 * One harness instance's sessions: Wake takes a session's lease and drives it in the background
 * with the loop its metadata names; when the loop has nothing left to do the lease is released.
 * Wakes are idempotent: a session this instance drives already, or that another instance holds,
 * is left alone (the holder follows the log and sees the new input).
 */
import { randomBytes } from "node:crypto";
import { MhError } from "@metaharness/errors";
import type { ModelClient } from "@metaharness/model-client";
import { WakeOutcome, type ActiveSession, type SandboxBrokerService } from "@metaharness/proto";
import { loggerFor, type Logger, type PromiseClient } from "@metaharness/service-kit";
import { LeaseKeeper } from "./lease-keeper.js";
import { LogPort, type SessionLogClient } from "./log-port.js";
import type { HarnessLoop } from "./loop/harness-loop.js";
import { SandboxPort } from "./tools/sandbox.js";

export interface SupervisorOptions {
  readonly instanceId?: string;
  readonly log: SessionLogClient;
  readonly broker: PromiseClient<typeof SandboxBrokerService> | undefined;
  readonly model: ModelClient;
  readonly loops: ReadonlyMap<string, HarnessLoop>;
  readonly leaseTtlMs: number;
  readonly logger: Logger;
}

interface Active {
  readonly lease: LeaseKeeper;
  readonly done: Promise<void>;
}

export class Supervisor {
  readonly instanceId: string;
  private readonly active = new Map<string, Active>();
  private stopping = false;

  constructor(private readonly opts: SupervisorOptions) {
    this.instanceId = opts.instanceId ?? `harness-${randomBytes(4).toString("hex")}-${process.pid}`;
  }

  async wake(sessionId: string): Promise<{ outcome: WakeOutcome; holder: string }> {
    if (this.stopping) throw new MhError("UNAVAILABLE", `harness ${this.instanceId} is shutting down`);
    if (this.active.has(sessionId)) return { outcome: WakeOutcome.WAKE_OUTCOME_ALREADY_RUNNING, holder: this.instanceId };
    const logger = loggerFor(this.opts.logger, { sessionId });
    const got = await LeaseKeeper.acquire(this.opts.log, sessionId, this.instanceId, this.opts.leaseTtlMs, logger);
    if (!(got instanceof LeaseKeeper)) return { outcome: WakeOutcome.WAKE_OUTCOME_HELD_ELSEWHERE, holder: got.heldBy };
    if (this.active.has(sessionId)) {
      // Two wakes raced in this instance; the first one drives.
      return { outcome: WakeOutcome.WAKE_OUTCOME_ALREADY_RUNNING, holder: this.instanceId };
    }
    const done = this.drive(sessionId, got, logger);
    this.active.set(sessionId, { lease: got, done });
    return { outcome: WakeOutcome.WAKE_OUTCOME_STARTED, holder: this.instanceId };
  }

  list(): ActiveSession[] {
    return [...this.active.entries()].map(([sessionId, a]) => ({ sessionId, leaseEpoch: a.lease.epoch, lastSeq: 0 }));
  }

  /** Stops driving (leases are released, another instance resumes) and waits for the loops. */
  async stop(): Promise<void> {
    this.stopping = true;
    const all = [...this.active.values()];
    await Promise.all(all.map((a) => a.lease.release()));
    await Promise.allSettled(all.map((a) => a.done));
  }

  private async drive(sessionId: string, lease: LeaseKeeper, logger: Logger): Promise<void> {
    try {
      const log = new LogPort(this.opts.log, sessionId);
      const session = await log.session();
      const name = session.metadata?.harness || "tool-loop";
      const loop = this.opts.loops.get(name);
      if (loop === undefined) throw new MhError("FAILED_PRECONDITION", `unknown harness "${name}"`);
      const sandbox = this.opts.broker === undefined ? undefined : new SandboxPort(this.opts.broker, sessionId);
      logger.info({ epoch: lease.epoch, harness: name }, "driving session");
      await loop.run({ session, log, leaseEpoch: lease.epoch, model: this.opts.model, sandbox, logger, signal: lease.signal });
    } catch (err) {
      const e = MhError.from(err);
      if (lease.signal.aborted || e.code === "ABORTED") logger.info({ err: e.message }, "stopped: the lease is gone");
      else logger.error({ err: e }, "session loop failed");
    } finally {
      this.active.delete(sessionId);
      await lease.release();
    }
  }
}
