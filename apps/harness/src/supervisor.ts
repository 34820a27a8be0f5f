/**
 * One harness instance's sessions: Wake takes a session's lease and drives it in the background
 * with the loop its metadata names; when the loop has nothing left to do (and has lingered
 * `idleLingerMs` for the session's next input, tool-loop.ts) the lease is released.
 * Wakes are idempotent: a session this instance drives already (lingering included), or that
 * another instance holds, is left alone (the holder follows the log and sees the new input).
 */
import { randomBytes } from "node:crypto";
import { MhError, backoffMs, retryPolicy } from "@metaharness/errors";
import type { ModelClient } from "@metaharness/model-client";
import { WakeOutcome, type ActiveSession, type SandboxBrokerService, type Session } from "@metaharness/proto";
import type { PromiseClient } from "@metaharness/service-kit/grpc";
import { loggerFor, type ContextLogger, type Logger } from "@metaharness/service-kit/logging";
import { LeaseKeeper, lingerMarginMs } from "./lease-keeper.js";
import { LeaseRenewer } from "./lease-renewer.js";
import { sessionsActive, sessionsLingering } from "./loop/turn-meter.js";
import { LogPort, type SessionLogClient } from "./log-port.js";
import type { HarnessLoop } from "./loop/harness-loop.js";
import { McpPort, type CredentialProxyClient } from "./tools/mcp.js";
import { isSelfHosted, sandboxNetwork, sandboxPackages } from "./tools/environment.js";
import { SandboxPort, brokerRepositories } from "./tools/sandbox.js";
import { RetryStatus, StopReasonType, idle, sessionError } from "./loop/turn-events.js";

export interface SupervisorOptions {
  readonly instanceId?: string;
  readonly log: SessionLogClient;
  readonly broker: PromiseClient<typeof SandboxBrokerService> | undefined;
  /** The credential vault proxy, through which MCP tools are called; undefined: MCP tools answer an error. */
  readonly credentialProxy?: CredentialProxyClient | undefined;
  readonly model: ModelClient;
  readonly loops: ReadonlyMap<string, HarnessLoop>;
  readonly leaseTtlMs: number;
  /** The coupled baseline for benchmarks: provision the sandbox before the first model call. */
  readonly eagerSandbox?: boolean;
  /** How long a self-hosted environment's worker may take to answer a tool call. */
  readonly workerToolTimeoutMs?: number;
  /** How long a loop keeps a session after its turn, for its next input (MH_IDLE_LINGER_MS). */
  readonly idleLingerMs?: number;
  readonly logger: Logger;
}

/**
 * How long a loop woken beside input still being appended (WakeRequest.input_landing) follows the
 * log for it when it finds nothing to do: an append takes milliseconds; one that fails leaves the
 * loop to give the session back after this.
 */
export const INPUT_LANDING_WAIT_MS = 5_000;

/** How long stop() waits for the loops once their leases are released. */
const STOP_GRACE_MS = 1500;
/** After a loop fails (not a lost lease), wakes of that session wait 1 s, doubling up to a minute. */
const FAILURE_BACKOFF = retryPolicy({ initialIntervalMs: 1_000, maxIntervalMs: 60_000, jitter: 0, maxAttempts: Number.POSITIVE_INFINITY });

interface Active {
  readonly lease: LeaseKeeper;
  readonly log: LogPort;
  readonly done: Promise<void>;
}

export class Supervisor {
  readonly instanceId: string;
  private readonly active = new Map<string, Active>();
  private readonly failures = new Map<string, { count: number; until: number }>();
  private readonly waking = new Set<string>();
  /**
   * Leases being given back, by session: a wake of the session waits for its release first. The
   * loop is no longer active then, but the lease is still this instance's, and an AcquireLease by
   * the same holder keeps its epoch: the release under way would then free the new driver's lease
   * (test/integration/harness/release-race.test.ts).
   */
  private readonly releasing = new Map<string, Promise<void>>();
  private stopping = false;
  /** Every lease of this instance renewed together, in one call a tick. */
  private readonly renewer: LeaseRenewer;
  /** Sessions this instance started driving since it started (a metric; tests read it). */
  started = 0;

  constructor(private readonly opts: SupervisorOptions) {
    this.instanceId = opts.instanceId ?? `harness-${randomBytes(4).toString("hex")}-${process.pid}`;
    this.renewer = new LeaseRenewer(opts.log);
  }

  /** `inputLanding`: the caller is appending the session's input now (WakeRequest.input_landing). */
  async wake(sessionId: string, opts: { readonly inputLanding?: boolean } = {}): Promise<{ outcome: WakeOutcome; holder: string; readSeq: number }> {
    if (this.stopping) throw new MhError("UNAVAILABLE", `harness ${this.instanceId} is shutting down`);
    const running = this.active.get(sessionId);
    if (running !== undefined) return { outcome: WakeOutcome.WAKE_OUTCOME_ALREADY_RUNNING, holder: this.instanceId, readSeq: running.log.lastSeq };
    const failed = this.failures.get(sessionId);
    if (failed !== undefined && Date.now() < failed.until) {
      throw new MhError("UNAVAILABLE", `session ${sessionId} failed ${failed.count} time(s) here; retrying after ${new Date(failed.until).toISOString()}`);
    }
    // Two wakes racing in this instance (Kafka and an RPC): the first one takes the lease and
    // drives; a second keeper for the same lease would renew it after the first released it.
    if (this.waking.has(sessionId)) return { outcome: WakeOutcome.WAKE_OUTCOME_ALREADY_RUNNING, holder: this.instanceId, readSeq: 0 };
    const logger = loggerFor(this.opts.logger, { sessionId });
    this.waking.add(sessionId);
    let got: Awaited<ReturnType<typeof LeaseKeeper.acquire>>;
    // The session's metadata (which loop, which tools) comes back with the lease, from the same
    // statement: no GetSession before or beside it; and so does a short session's whole log, read
    // by the log once the lease was taken. Events are read only once the lease is held, so no
    // append of a previous holder can land after the read unseen: the lease fences it first.
    try {
      await this.releasing.get(sessionId);
      // A terminated session takes no lease: the log refuses it (naming session_id), and there is
      // nothing to do; its epoch does not go up.
      got = await LeaseKeeper.acquire(this.renewer, sessionId, this.instanceId, this.opts.leaseTtlMs, logger);
    } finally {
      this.waking.delete(sessionId);
    }
    if (got === "terminated") return { outcome: WakeOutcome.WAKE_OUTCOME_NOTHING_TO_DO, holder: "", readSeq: 0 };
    if (!(got instanceof LeaseKeeper)) return { outcome: WakeOutcome.WAKE_OUTCOME_HELD_ELSEWHERE, holder: got.heldBy, readSeq: 0 };
    if (this.stopping) {
      // Taken while stop() released the others: given back too, not left to expire.
      await got.release();
      throw new MhError("UNAVAILABLE", `harness ${this.instanceId} is shutting down`);
    }
    this.started += 1;
    const log = new LogPort(this.opts.log, sessionId);
    if (got.history !== undefined) log.hold(got.history);
    const done = this.drive(log, got, got.session ?? log.session(), logger, opts.inputLanding === true);
    this.active.set(sessionId, { lease: got, log, done });
    sessionsActive.add(1);
    // The session's head as the lease was taken, in the same statement (0 from a log that sends no session).
    return { outcome: WakeOutcome.WAKE_OUTCOME_STARTED, holder: this.instanceId, readSeq: got.session?.lastSeq ?? 0 };
  }

  /** How many sessions this instance drives now. */
  get driving(): number {
    return this.active.size;
  }

  list(): ActiveSession[] {
    return [...this.active.entries()].map(([sessionId, a]) => ({ sessionId, leaseEpoch: a.lease.epoch, lastSeq: a.log.lastSeq }));
  }

  /**
   * Stops driving: every lease is given back at once (another instance resumes without waiting
   * for it to expire), which aborts the loops; then waits for them, at most `graceMs`: a loop
   * that does not stop by then is left to the process's exit (its writes are fenced by the epoch
   * the next holder takes). SIGTERM once waited here, and for the Kafka group, over 15 s.
   */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    this.stopping = true;
    const all = [...this.active.values()];
    await Promise.all(all.map((a) => a.lease.release()));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), graceMs)));
    const outcome = await Promise.race([Promise.allSettled(all.map((a) => a.done)), late]);
    clearTimeout(timer);
    if (outcome === "late") this.opts.logger.warn({ graceMs, sessions: this.active.size }, "sessions still stopping at shutdown; leaving them");
  }

  /**
   * A loop failed for a reason of its own (a bug, a log that refuses an event): end the turn in
   * the log so the session is not left running, and back off before driving it again here, so a
   * persistent failure is not retried in a hot loop. The turn ends only if the log still ends
   * where the loop last appended (`ran`, or the session as the lease was taken), as the loops' own
   * appendAt does: an idle after input that came while the turn failed would mark that input
   * answered (the idle clears awaiting_harness, so no sweep finds it), and the gateway sends no
   * Wake while the lease has time left. Then the failure is recorded alone, and the session, still
   * awaiting a harness, is named on every harness's line when its lease goes back (a next turn
   * here once the backoff ends, through the sweeper, or at once elsewhere).
   */
  private async fail(ran: LogPort, lease: LeaseKeeper, err: MhError, logger: ContextLogger): Promise<void> {
    const { sessionId } = ran;
    logger.error({ err }, "session loop failed; ending the turn");
    const count = (this.failures.get(sessionId)?.count ?? 0) + 1;
    const delay = backoffMs(FAILURE_BACKOFF, count);
    this.failures.set(sessionId, { count, until: Date.now() + delay });
    // A port of its own: the loop's may hold deltas for its next append.
    const log = new LogPort(this.opts.log, sessionId);
    const failure = sessionError("unknown_error", `the harness failed: ${err.message}`, RetryStatus.RETRY_STATUS_EXHAUSTED);
    const ended = [failure, idle(StopReasonType.STOP_REASON_TYPE_RETRIES_EXHAUSTED)];
    // Where its own last append (or the lease) left the log, not the last event it saw: input its
    // follow merged while the turn ran was seen, and not answered.
    const seen = Math.max(ran.lastAppendedSeq, lease.session?.lastSeq ?? 0);
    try {
      if (lease.session === undefined && seen === 0) await log.emit(ended, lease.epoch);
      else await log.emit(ended, lease.epoch, seen);
    } catch (e) {
      const refused = MhError.from(e);
      if (refused.code !== "FAILED_PRECONDITION" || refused.field !== "expected_seq") {
        logger.warn({ err: refused }, "could not record the failure in the log");
        return;
      }
      logger.info({ seen }, "input came while the turn failed; the failure is recorded, the turn left to take it up");
      await log.emit([failure], lease.epoch).catch((again: unknown) => logger.warn({ err: again }, "could not record the failure in the log"));
    }
  }

  private async drive(log: LogPort, lease: LeaseKeeper, metadata: Session | Promise<Session>, logger: ContextLogger, inputLanding: boolean): Promise<void> {
    const { sessionId } = log;
    try {
      const session = await metadata;
      const name = session.metadata?.harness || "tool-loop";
      const loop = this.opts.loops.get(name);
      if (loop === undefined) throw new MhError("FAILED_PRECONDITION", `unknown harness "${name}"`);
      // A self-hosted environment's tools run on its workers: its sessions never reach the broker.
      const broker = isSelfHosted(session.metadata) ? undefined : this.opts.broker;
      const setup = {
        network: () => sandboxNetwork(session.metadata),
        packages: () => sandboxPackages(session.metadata),
        fork: () => session.metadata?.workspaceFork,
        // Read afresh: the session's repositories may change while it runs (UpdateSession).
        repositories: async () => brokerRepositories((await log.session()).metadata?.repositories ?? []),
      };
      const sandbox = broker === undefined ? undefined : new SandboxPort(broker, sessionId, setup);
      const mcp = this.opts.credentialProxy === undefined ? undefined : new McpPort(this.opts.credentialProxy, sessionId);
      logger.info({ epoch: lease.epoch, harness: name }, "driving session");
      // The turn's last append sets the lease to run out with the linger, and a margin to renew
      // it in when input comes at the linger's very end (lease-keeper.ts). Not past the lease's
      // own TTL: a holder that hangs loses a lingering session as soon as a working one would.
      const lingerMs = this.opts.idleLingerMs ?? 0;
      const atIdleTtl = lingerMs + lingerMarginMs(this.opts.leaseTtlMs);
      const atIdle =
        lingerMs > 0 && atIdleTtl <= this.opts.leaseTtlMs
          ? { ttlMs: atIdleTtl, appending: (append: Promise<unknown>) => lease.appending(append, atIdleTtl) }
          : undefined;
      if (this.opts.eagerSandbox === true) await sandbox?.warm();
      await loop.run({
        session,
        log,
        leaseEpoch: lease.epoch,
        model: this.opts.model,
        sandbox,
        mcp,
        logger,
        signal: lease.signal,
        ...(this.opts.workerToolTimeoutMs === undefined ? {} : { workerToolTimeoutMs: this.opts.workerToolTimeoutMs }),
        ...(this.opts.idleLingerMs === undefined ? {} : { idleLingerMs: this.opts.idleLingerMs }),
        ...(inputLanding ? { awaitInputMs: INPUT_LANDING_WAIT_MS } : {}),
        lingering: {
          start: (forMs) => {
            countLingering(true);
            lease.lingering(forMs);
          },
          stop: (how) => {
            countLingering(false);
            if (how === "resumed") lease.resume();
            else if (how === "ran out") lease.ranOut();
          },
        },
        ...(atIdle === undefined ? {} : { leaseAtIdle: atIdle }),
      });
      this.failures.delete(sessionId);
    } catch (err) {
      const e = MhError.from(err);
      if (lease.signal.aborted || e.code === "ABORTED") logger.info({ err: e.message }, "stopped: the lease is gone");
      else await this.fail(log, lease, e, logger);
    } finally {
      // Registered before the loop stops being active, so that no wake comes between the two.
      const released = lease.release();
      this.releasing.set(sessionId, released);
      if (this.active.delete(sessionId)) sessionsActive.add(-1);
      await released;
      if (this.releasing.get(sessionId) === released) this.releasing.delete(sessionId);
    }
  }
}

/** A session kept between turns counts as lingering, not active (the autoscaler reads active). */
function countLingering(on: boolean): void {
  sessionsActive.add(on ? -1 : 1);
  sessionsLingering.add(on ? 1 : -1);
}
