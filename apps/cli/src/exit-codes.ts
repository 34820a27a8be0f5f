/**
 * How `mh` says how things ended. `mh run` and `mh demo` map the session's last stop reason to
 * a code, so scripts can tell a finished turn from one waiting for a decision, out of budget,
 * failed or interrupted. `mh --help` prints this table (EXIT_CODE_HELP), and a test keeps both
 * in step.
 */

export const EXIT = {
  /** The turn ended normally (stop reason end_turn). */
  ok: 0,
  /** The CLI failed: the deployment could not be reached, a request was refused, a bug. */
  failure: 1,
  /** The command line is wrong. */
  usage: 2,
  /** The agent waits for the client: a tool confirmation or a custom tool result. */
  requiresAction: 3,
  /** The session's token budget is spent. */
  budgetReached: 4,
  /** The turn failed: retries exhausted, the session terminated, or an error ended the stream. */
  error: 5,
  /** The model refused. */
  refusal: 6,
  /**
   * The machine is not ready for an embedded stack, and mh could not make it so: bubblewrap is
   * missing (not root, no password-less sudo) or cannot start a sandbox here, or the port is taken.
   */
  setup: 7,
  /** Interrupted (Ctrl-C sends user.interrupt first), as shells report SIGINT. */
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** How a session run ended, from the client's side. */
export type Ending =
  | "end_turn"
  | "requires_action"
  | "budget_reached"
  | "retries_exhausted"
  | "refusal"
  | "interrupted"
  | "terminated"
  | "stream_ended"
  /** A stop reason this CLI does not know (a newer server). */
  | "unknown";

const BY_ENDING: Readonly<Record<Ending, ExitCode>> = {
  end_turn: EXIT.ok,
  requires_action: EXIT.requiresAction,
  budget_reached: EXIT.budgetReached,
  retries_exhausted: EXIT.error,
  terminated: EXIT.error,
  stream_ended: EXIT.error,
  unknown: EXIT.error,
  refusal: EXIT.refusal,
  interrupted: EXIT.interrupted,
};

export function exitCodeFor(ending: Ending): ExitCode {
  return BY_ENDING[ending];
}

/** The exit code table of `mh --help`. */
export const EXIT_CODE_HELP = `exit codes (mh run, mh demo; mh dev uses 0, 1, 2, 7):
  ${EXIT.ok}    end_turn: the agent finished its turn
  ${EXIT.failure}    the CLI failed (deployment unreachable, request refused, ...)
  ${EXIT.usage}    bad command line
  ${EXIT.requiresAction}    requires_action: the agent waits for a tool confirmation or custom tool result
  ${EXIT.budgetReached}    budget_reached: the session's token budget is spent
  ${EXIT.error}    retries_exhausted, session terminated, the stream failed, or an unknown stop reason
  ${EXIT.refusal}    refusal: the model refused
  ${EXIT.setup}    setup: bubblewrap is missing and mh could not install it, or it cannot start a sandbox
       here, or the port is in use (the message says which command to run)
  ${EXIT.interrupted}  interrupted (Ctrl-C sends user.interrupt, then mh exits)`;
