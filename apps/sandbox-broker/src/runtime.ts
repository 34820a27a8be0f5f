/**
 * What the broker needs of a sandbox, whatever runs it: a bubblewrap process on this machine
 * (driver/local-sandbox.ts) or an external hand over a gRPC stream (hands/hand-sandbox.ts). The
 * harness never learns which; the broker only learns this much.
 */
import type { Input, ToolOutcome } from "./tools/types.js";

export interface RuntimeCall {
  readonly callId: string;
  readonly name: string;
  readonly input: Input;
  readonly timeoutMs: number;
  /** Aborted when the caller cancels (an interrupted turn): the call's processes are killed. */
  readonly signal?: AbortSignal;
}

export interface SandboxRuntime {
  /** "bubblewrap", "external:<kind>". */
  readonly driver: string;
  /** How resources are enforced (Sandbox.limits); empty for external hands. */
  readonly limits: string;
  /** Calls running now (the reaper does not reap a busy sandbox for idleness). */
  readonly inFlight: number;
  /**
   * Runs tool `name`. A tool that fails resolves with isError; a sandbox that is gone, or goes
   * while the call runs, rejects with SandboxGoneError carrying the message for the model.
   */
  execute(call: RuntimeCall): Promise<ToolOutcome>;
  /** Resolves once, with the reason, if the sandbox dies by itself (never after stop()). */
  readonly lost: Promise<string>;
  /** Ends it on purpose; calls in flight fail with `sandbox <id> was released: <reason>`. Idempotent. */
  stop(reason: string): Promise<void>;
}
