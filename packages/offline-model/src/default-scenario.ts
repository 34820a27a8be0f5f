/**
 * The scenario used when a request names none: a friendly reply that echoes the user's last text
 * (or acknowledges the tool results it got), on every turn. It makes an offline `mh run "hello"`
 * show something sensible instead of an error.
 */
import { defineScenario, type Scenario, type StepContext, type StepSpec } from "./scenario.js";

export const DEFAULT_SCENARIO_NAME = "default";
/** Echoed text is cut here, so a huge prompt does not come back whole. */
export const MAX_ECHO_CHARS = 500;

function clip(text: string): string {
  const oneLine = text.trim().replace(/\s+/g, " ");
  return oneLine.length <= MAX_ECHO_CHARS ? oneLine : `${oneLine.slice(0, MAX_ECHO_CHARS)}…`;
}

export function defaultReply(ctx: StepContext): StepSpec {
  const last = ctx.request.messages.at(-1);
  const freshResults = ctx.toolResults.filter((r) => r.messageIndex === ctx.request.messages.length - 1);
  if (last?.role === "user" && freshResults.length > 0) {
    const lines = freshResults.map((r) => `- ${r.toolName || r.toolUseId}${r.isError ? " (error)" : ""}: ${clip(r.content)}`);
    return { text: `Thanks, I received ${freshResults.length} tool result(s):\n${lines.join("\n")}` };
  }
  const said = clip(ctx.lastUserText);
  return {
    text:
      said === ""
        ? "Hello! I'm the offline model: Meta-Harness is running without access to Anthropic's API."
        : `Hello! I'm the offline model: Meta-Harness is running without access to Anthropic's API. You said: "${said}"`,
  };
}

export const defaultScenario: Scenario = defineScenario(DEFAULT_SCENARIO_NAME, [defaultReply], {
  onExhausted: "repeat-last",
});
