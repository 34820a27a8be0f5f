/**
 * The demo agent's script for the offline model: look at the repository the broker cloned into
 * the sandbox, run its tests, find and read the failing function, fix it, run the tests again,
 * commit and push the fix, summarize. Every tool call is real (the broker runs it in a bubblewrap
 * sandbox, and git reaches the repository through the credential vault proxy); each step reads
 * the results it got, so the agent reports what actually happened, and stops early, saying why,
 * when something is off.
 */
import { defineScenario, type Scenario, type StepContext, type StepSpec } from "@metaharness/offline-model";
import { BUG, PROJECT_DIR, PROJECT_PATH } from "./project.js";

export const DEMO_SCENARIO = "mh-demo";
/** The demo agent's system prompt; the marker selects this script in the offline model. */
export const DEMO_SYSTEM = `You fix bugs in small projects. Run the tests before and after a change. [scenario:${DEMO_SCENARIO}]`;
export const DEMO_PROMPT = "The tests of the stats project fail. Find the bug, fix it, commit the fix and push it.";
export const FIX_MESSAGE = "max: start from the first value, so lists of negatives work";

const RUN_TESTS = { name: "bash", input: { command: `cd ${PROJECT_PATH} && bash test.sh` } };
const FILE = `${PROJECT_DIR}/${BUG.file}`;
const GIT_IDENTITY = 'git config user.name "mh demo" && git config user.email demo@metaharness.invalid';
/** A first look: the history, and where origin points (mh::<url>: no token in the sandbox). */
const LOOK = { name: "bash", input: { command: `cd ${PROJECT_PATH} && ${GIT_IDENTITY} && git log --oneline -3 && git remote get-url origin` } };
const DELIVER = { name: "bash", input: { command: `cd ${PROJECT_PATH} && git commit -qam '${FIX_MESSAGE}' && git push -q origin HEAD 2>&1 && git log --oneline -1` } };

function lastOutput(ctx: StepContext): { text: string; failed: boolean } {
  const last = ctx.lastToolResult;
  return { text: last?.content ?? "", failed: last === undefined || last.isError };
}

function failures(output: string): string[] {
  return output.split("\n").filter((l) => l.startsWith("FAIL "));
}

/** Ends the turn saying what went wrong, instead of carrying on blindly. */
function stop(what: string, output: string): StepSpec {
  const tail = output.trim().split("\n").slice(-5).join("\n");
  return { text: `${what}, so I stop here. The last output was:\n\n${tail}` };
}

export interface DemoPace {
  /** Output tokens per second of the agent's text (tokens appear as they come). */
  readonly tokensPerSecond?: number;
}

export function demoScenario(pace: DemoPace = {}): Scenario {
  const tps = pace.tokensPerSecond ?? 60;
  const say = (spec: StepSpec): StepSpec => ({ tokensPerSecond: tps, ...spec });
  return defineScenario(DEMO_SCENARIO, [
    say({ text: "The repository is cloned into the sandbox; let me look at it.", toolUses: [LOOK] }),
    (ctx) => {
      const setup = lastOutput(ctx);
      return setup.failed ? stop("Getting the project failed", setup.text) : say({ text: "The project is in place. Running its tests first.", toolUses: [RUN_TESTS] });
    },
    (ctx) => {
      const run = lastOutput(ctx);
      const failing = failures(run.text);
      if (failing.length === 0) return run.failed ? stop("The tests did not run", run.text) : say({ text: "All tests pass already: there is nothing to fix." });
      const quoted = failing.map((l) => `  ${l}`).join("\n");
      return say({
        text: `${failing.length === 1 ? "One test fails" : `${failing.length} tests fail`}:\n${quoted}\nLet me find max().`,
        toolUses: [{ name: "grep", input: { pattern: "^max\\(\\)", path: PROJECT_DIR } }],
      });
    },
    (ctx) => {
      // grep answers "<file>:<line>:max() {"; read the function from there.
      const line = /:(\d+):/.exec(lastOutput(ctx).text)?.[1];
      const range = line === undefined ? {} : { offset: Number(line), limit: 7 };
      return say({ text: `It is in ${BUG.file}.`, toolUses: [{ name: "read", input: { path: FILE, ...range } }] });
    },
    (ctx) => {
      const source = lastOutput(ctx);
      if (!source.text.includes(BUG.before)) return stop(`${BUG.file} does not look as expected`, source.text);
      return say({
        text: "Found it: max() starts its running maximum at 0 instead of at its first argument, so for a list of negative numbers it answers 0. Starting from $1 fixes that.",
        toolUses: [{ name: "edit", input: { path: FILE, old_string: BUG.before, new_string: BUG.after } }],
      });
    },
    (ctx) => {
      const edit = lastOutput(ctx);
      return edit.failed ? stop("The edit failed", edit.text) : say({ text: "Running the tests again.", toolUses: [RUN_TESTS] });
    },
    (ctx) => {
      const run = lastOutput(ctx);
      if (run.failed) return stop("The tests still fail", run.text);
      return say({ text: "All green. Committing the fix and pushing it.", toolUses: [DELIVER] });
    },
    (ctx) => {
      const delivered = lastOutput(ctx);
      if (delivered.failed) return stop("Pushing the fix failed", delivered.text);
      const commit = delivered.text.trim().split("\n")[0] ?? "";
      const summary = [
        `Done. The bug was in max() (${BUG.file}): it started from 0, so it could never return a negative number, and \`max -7 -2 -5\` gave 0 instead of -2.`,
        `It now starts from its first argument; all 4 tests pass, and the fix is pushed to the repository (${commit}).`,
      ].join("\n");
      return say({ text: summary });
    },
  ]);
}
