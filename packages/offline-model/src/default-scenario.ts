/**
 * The scenario used when a request names none, on every turn. A plain request ("list the files",
 * "run <command>", "read <file>": plain-requests.ts) becomes a call of the tool it asks for, and
 * the tool's result is then shown as the answer, so an offline `mh run` does something real in the
 * sandbox. Anything else gets a friendly reply that echoes the user's last text and says what the
 * offline model can do, and how to use Claude instead.
 */
import { plainToolUse } from "./plain-requests.js";
import { defineScenario, type Scenario, type StepContext, type StepSpec, type ToolResultView } from "./scenario.js";

export const DEFAULT_SCENARIO_NAME = "default";
/** Echoed text is cut here, so a huge prompt does not come back whole. */
export const MAX_ECHO_CHARS = 500;
/** A tool's output shown as the answer is cut here (lines, then characters). */
export const MAX_SHOWN_LINES = 60;
export const MAX_SHOWN_CHARS = 4_000;

const INTRO = "Hello! I'm the offline model: Meta-Harness is running without access to Anthropic's API.";
const CAN_DO =
  'Without an API key I act on plain requests, such as "list the files", "run uname -a" or "read /usr/lib/os-release"; set ANTHROPIC_API_KEY to talk to Claude.';

function clip(text: string): string {
  const oneLine = text.trim().replace(/\s+/g, " ");
  return oneLine.length <= MAX_ECHO_CHARS ? oneLine : `${oneLine.slice(0, MAX_ECHO_CHARS)}…`;
}

/** A tool's output as a block of text, cut to a readable size. */
function shown(output: string): string {
  const lines = output.replace(/\s+$/, "").split("\n");
  let text = lines.slice(0, MAX_SHOWN_LINES).join("\n");
  if (text.length > MAX_SHOWN_CHARS) text = text.slice(0, MAX_SHOWN_CHARS);
  const cut = text.length < lines.join("\n").length ? `\n… (${lines.length} lines in all)` : "";
  return text === "" ? "(no output)" : `${text}${cut}`;
}

/** The answer to the result of a plain request's tool call. */
function report(result: ToolResultView): string {
  const { toolName, toolInput, content, isError } = result;
  if (toolName === "bash") {
    const command = typeof toolInput["command"] === "string" ? toolInput["command"] : "";
    return `${isError ? `\`${command}\` failed` : `\`${command}\` printed`}:\n\n${shown(content)}`;
  }
  const path = toolInput["path"] ?? toolInput["file_path"];
  return `${isError ? `Reading ${String(path)} failed` : `${String(path)}`}:\n\n${shown(content)}`;
}

export function defaultReply(ctx: StepContext): StepSpec {
  const last = ctx.request.messages.at(-1);
  const freshResults = ctx.toolResults.filter((r) => r.messageIndex === ctx.request.messages.length - 1);
  if (last?.role === "user" && freshResults.length > 0) {
    const only = freshResults.length === 1 ? freshResults[0] : undefined;
    if (only !== undefined && (only.toolName === "bash" || only.toolName === "read")) return { text: report(only) };
    const lines = freshResults.map((r) => `- ${r.toolName || r.toolUseId}${r.isError ? " (error)" : ""}: ${clip(r.content)}`);
    return { text: `Thanks, I received ${freshResults.length} tool result(s):\n${lines.join("\n")}` };
  }
  const use = plainToolUse(ctx.lastUserText, ctx.request.tools);
  if (use !== undefined) {
    const what = use.name === "read" ? `Reading ${String(use.input["path"] ?? use.input["file_path"])}.` : `Running \`${String(use.input["command"])}\` in the sandbox.`;
    return { text: what, toolUses: [use] };
  }
  const said = clip(ctx.lastUserText);
  return { text: said === "" ? `${INTRO} ${CAN_DO}` : `${INTRO} You said: "${said}" ${CAN_DO}` };
}

export const defaultScenario: Scenario = defineScenario(DEFAULT_SCENARIO_NAME, [defaultReply], {
  onExhausted: "repeat-last",
});
