/**
 * What a tool implementation needs and returns. Tools see a sandbox only through `SandboxOps`
 * (run a process, read a file, write a file, all executed by the in-sandbox agent), so no tool
 * code ever opens a host path, and the same tools run on any driver that offers these three.
 */
import type { GetRequest, FileResult, PutRequest, RunRequest, RunResult, WriteResult } from "../protocol/frames.js";

export interface RunOutcome extends RunResult {
  /** The kernel's out-of-memory killer killed a process of the sandbox during this call. */
  readonly oomKilled: boolean;
}

export interface SandboxOps {
  run(req: RunRequest, signal?: AbortSignal): Promise<RunOutcome>;
  get(req: GetRequest): Promise<FileResult>;
  put(req: PutRequest): Promise<WriteResult>;
}

export interface ToolContext {
  readonly ops: SandboxOps;
  /** Timeout when the call names none (ExecuteRequest.timeout_ms or the broker's default). */
  readonly timeoutMs: number;
  /** The most a call may ask for in its input. */
  readonly maxTimeoutMs: number;
  readonly outputCapBytes: number;
  readonly maxFileBytes: number;
  /** The sandbox's memory limit, to explain an out-of-memory kill. */
  readonly memoryBytes: number;
  /** The environment commands run with (SANDBOX_ENV, plus e.g. HTTP_PROXY in an ALLOWLIST sandbox). */
  readonly env: readonly string[];
  /** The caller went away: processes started for this call are killed. */
  readonly signal?: AbortSignal;
}

/** The result the model sees; a failed tool is a result with isError, never a gRPC failure. */
export interface ToolOutcome {
  readonly output: string;
  readonly isError: boolean;
  readonly exitCode: number;
  readonly truncated: boolean;
}

/** Thrown by a tool for a failure the model should read (bad input, missing file, ...). */
export class ToolError extends Error {
  override readonly name = "ToolError";
}

export function ok(output: string): ToolOutcome {
  return { output, isError: false, exitCode: 0, truncated: false };
}

export function failed(output: string, exitCode = -1): ToolOutcome {
  return { output, isError: true, exitCode, truncated: false };
}

export type Input = Readonly<Record<string, unknown>>;

export type Tool = (input: Input, ctx: ToolContext) => Promise<ToolOutcome>;
