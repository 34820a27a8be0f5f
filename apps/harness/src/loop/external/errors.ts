/**
 * The one error of the agent-process boundary. Every way an external agent can fail a turn is a
 * kind here, so the loop turns each into a session.error (never a hung or crashed session) and
 * tells them apart from failures of its own (the log, the lease), which it must not swallow.
 */
export type AgentFailureKind =
  /** The command could not be started (not found, not executable). */
  | "spawn"
  /** The process exited (or closed stdout) in the middle of a turn. */
  | "exited"
  /** It printed something that is not a valid protocol line. */
  | "protocol"
  /** It stayed silent (or did not read) longer than the silence timeout. */
  | "timeout"
  /** No agent of that name is configured. */
  | "config";

export class AgentProcessError extends Error {
  override readonly name = "AgentProcessError";

  constructor(
    readonly kind: AgentFailureKind,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
  }
}
