/**
 * Which scripted answer a request gets: its scenario (by header or marker, else the default), its
 * step (assistant turns already in the conversation) and that step's spec (a step function is
 * called with the request; a bad result is the test's mistake and answers 400 saying so).
 */
import { ApiError } from "./api-error.js";
import { scenarioNameOf, stepContext, stepIndexOf } from "./conversation.js";
import { DEFAULT_SCENARIO_NAME } from "./default-scenario.js";
import type { ScenarioRegistry } from "./registry.js";
import { checkStepSpec, type StepSpec } from "./scenario.js";
import { applyTemplates } from "./template.js";
import type { MessagesRequest } from "./wire.js";

export interface Turn {
  readonly scenario: string;
  readonly stepIndex: number;
  readonly spec: StepSpec;
  /** `scenario "x" step 2`, for messages. */
  readonly where: string;
}

export function resolveTurn(request: MessagesRequest, header: string | undefined, registry: ScenarioRegistry): Turn {
  const name = scenarioNameOf(request, header) ?? DEFAULT_SCENARIO_NAME;
  const scenario = registry.get(name);
  if (scenario === undefined) {
    throw new ApiError(400, `unknown offline scenario "${name}" (known: ${registry.names().join(", ")})`);
  }
  const stepIndex = stepIndexOf(request.messages);
  const where = `scenario "${name}" step ${stepIndex}`;
  const step = scenario.steps[stepIndex] ?? (scenario.onExhausted === "repeat-last" ? scenario.steps.at(-1) : undefined);
  if (step === undefined) {
    throw new ApiError(
      400,
      `offline scenario "${name}" has ${scenario.steps.length} step(s), but the request already holds ` +
        `${stepIndex} assistant turn(s) and asks for step ${stepIndex}`,
    );
  }
  const ctx = stepContext(request, name, stepIndex);
  let spec: StepSpec;
  try {
    spec = checkStepSpec(typeof step === "function" ? step(ctx) : step, where);
  } catch (err) {
    throw new ApiError(400, `offline ${where}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return { scenario: name, stepIndex, spec: applyTemplates(spec, ctx), where };
}
