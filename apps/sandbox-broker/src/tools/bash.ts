/**
 * The bash tool. Each call is a fresh `bash -c` in its own process group (so a timeout kills the
 * command and everything it started, and the sandbox lives on), yet the working directory and
 * exported variables carry over from one call to the next, as in the official toolset's
 * persistent shell: the shell saves them to /tmp on exit and the next call loads them. Functions
 * and unexported variables do not carry over; `restart: true` forgets the saved state.
 *
 * If, 100 ms after the command exits, something it started still holds the output (`server &`),
 * the call's whole process group is killed; a server meant to outlive the call is started with
 * its output redirected (`nohup server > log 2>&1 &`) or in its own session (`setsid`).
 */
import { WORKSPACE } from "../inside/view.js";
import { optionalBool, optionalInt, requiredString } from "./input.js";
import { endingNote, exitCodeOf, outputText } from "./output.js";
import { ToolError, type Input, type ToolContext, type ToolOutcome } from "./types.js";

const STATE_FILE = "/tmp/.mh-shell-state";
/** How long background processes may hold the output after the command exits. */
export const BACKGROUND_GRACE_MS = 100;

// One line, so bash numbers the lines of the command itself from 1 in its error messages.
const WRAPPER = [
  `state=${STATE_FILE}`,
  'if [ -n "$MH_RESTART" ]; then rm -f "$state"; fi',
  "unset MH_RESTART",
  'if [ -r "$state" ]; then . "$state" 2>/dev/null; fi',
  `trap 'rc=$?; { export -p; printf "cd %q\\n" "$PWD"; } > "$state" 2>/dev/null; exit $rc' EXIT`,
  'eval "$1"',
].join("; ");

export async function bashTool(input: Input, ctx: ToolContext): Promise<ToolOutcome> {
  const restart = optionalBool("bash", input, "restart");
  if (restart && input["command"] === undefined) {
    await run(ctx, ":", ctx.timeoutMs, true);
    return { output: "bash session restarted", isError: false, exitCode: 0, truncated: false };
  }
  const command = requiredString("bash", input, "command");
  if (command.trim() === "") throw new ToolError("bash: command is empty");
  const asked = optionalInt("bash", input, 1, "timeout_ms", "timeout");
  if (asked !== undefined && asked > ctx.maxTimeoutMs) {
    throw new ToolError(`bash: timeout_ms ${asked} is above the limit of ${ctx.maxTimeoutMs} ms`);
  }
  return run(ctx, command, asked ?? ctx.timeoutMs, restart);
}

async function run(ctx: ToolContext, command: string, timeoutMs: number, restart: boolean): Promise<ToolOutcome> {
  const result = await ctx.ops.run({
    timeoutMs,
    capBytes: ctx.outputCapBytes,
    graceMs: BACKGROUND_GRACE_MS,
    cwd: WORKSPACE,
    argv: ["/bin/bash", "--noprofile", "--norc", "-c", WRAPPER, "bash", command],
    env: restart ? [...ctx.env, "MH_RESTART=1"] : ctx.env,
  }, ctx.signal);
  const { text, truncated } = outputText(result, ctx.outputCapBytes);
  const exitCode = exitCodeOf(result);
  const note = ctx.signal?.aborted === true ? "[cancelled: the caller interrupted this call]" : endingNote(result, timeoutMs, ctx.memoryBytes);
  const isError = result.timedOut || result.kind !== "exited" || result.code !== 0;
  let output = text.replace(/\n+$/, "");
  if (note !== undefined) output = output === "" ? note : `${output}\n${note}`;
  else if (isError && output === "") output = `exit code ${exitCode}`;
  return { output, isError, exitCode, truncated };
}
