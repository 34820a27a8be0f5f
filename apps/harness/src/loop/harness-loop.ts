/**
 * The loop itself is a plug-in: a session's metadata names which harness drives it ("tool-loop"
 * by default). Every loop gets the same context: the session's log (under the lease), the model,
 * the hands, and a signal that aborts when the lease is lost or the instance stops.
 */
import type { ModelClient } from "@metaharness/model-client";
import type { Session } from "@metaharness/proto";
import type { ContextLogger } from "@metaharness/service-kit/logging";
import type { LogPort } from "../log-port.js";
import type { McpPort } from "../tools/mcp.js";
import type { SandboxPort } from "../tools/sandbox.js";

export interface LoopContext {
  readonly session: Session;
  readonly log: LogPort;
  readonly leaseEpoch: number;
  readonly model: ModelClient;
  /** Undefined when no sandbox broker is configured: sandbox tools then answer with an error. */
  readonly sandbox: SandboxPort | undefined;
  /** Undefined when no credential proxy is configured: MCP tools then answer with an error. */
  readonly mcp?: McpPort | undefined;
  /**
   * In a self-hosted environment, how long a sandbox tool call may wait for the environment's
   * worker to answer before the harness answers it with an error (default 10 minutes).
   */
  readonly workerToolTimeoutMs?: number;
  /**
   * How long a loop that has nothing left to do keeps the session (its lease, its view of the
   * events) waiting for its next input, before it returns (MH_IDLE_LINGER_MS; 0 or undefined: it
   * returns at once). A loop may ignore it: returning at once is always correct.
   */
  readonly idleLingerMs?: number;
  /**
   * Woken beside input still being appended (WakeRequest.input_landing): a loop that finds the log
   * with nothing to do (state.ts awaitsInput) follows it this long for that input before it
   * decides, so that nobody needs to wake the session again. A loop that returns at once leaves
   * the input to the log's news of a freed session awaiting a harness, or to the sweeper.
   */
  readonly awaitInputMs?: number;
  /**
   * Told when the loop starts keeping the session between turns, for at most `forMs`, and when it
   * stops: `resumed` when input came to act on, `ran out` when its time ran out with none, `ended`
   * when it returns for another reason (a metric, and the lease's renewals: none while the lease
   * outlasts the linger, and no release of one that runs out with it; lease-keeper.ts).
   */
  readonly lingering?: { start(forMs: number): void; stop(how: "resumed" | "ran out" | "ended"): void };
  /**
   * With a linger: an append that ends a turn (its last event an idle) sets the lease to run
   * `ttlMs` from it (the linger and a margin), and `appending` is told of it, so that a session
   * that gets no more input needs no renewal and no release (session-events.ts).
   */
  readonly leaseAtIdle?: { readonly ttlMs: number; appending(append: Promise<unknown>): void };
  readonly logger: ContextLogger;
  /** Aborted when the lease is lost or the instance shuts down: stop at once, write nothing. */
  readonly signal: AbortSignal;
}

export interface HarnessLoop {
  readonly name: string;
  /** Drives the session until it has nothing left to do (idle, waiting, terminated). */
  run(ctx: LoopContext): Promise<void>;
}
