/**
 * Placeholders for scenarios written as data (JSON files cannot hold step functions):
 * `{{last_user_text}}` and `{{last_tool_result}}` in a step's text, thinking, or tool input strings
 * are replaced by what the request carries, so a JSON scenario can still show the model "saw" it.
 */
import type { StepContext, StepSpec } from "./scenario.js";

const PLACEHOLDER = /\{\{\s*(last_user_text|last_tool_result)\s*\}\}/g;

function fill(text: string, ctx: StepContext): string {
  return text.replace(PLACEHOLDER, (_m, name: string) =>
    name === "last_user_text" ? ctx.lastUserText : (ctx.lastToolResult?.content ?? ""),
  );
}

function fillDeep(value: unknown, ctx: StepContext): unknown {
  if (typeof value === "string") return fill(value, ctx);
  if (Array.isArray(value)) return value.map((v) => fillDeep(v, ctx));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillDeep(v, ctx)]));
  }
  return value;
}

export function applyTemplates(spec: StepSpec, ctx: StepContext): StepSpec {
  return {
    ...spec,
    ...(spec.text === undefined ? {} : { text: fill(spec.text, ctx) }),
    ...(spec.thinking === undefined ? {} : { thinking: fill(spec.thinking, ctx) }),
    ...(spec.toolUses === undefined
      ? {}
      : { toolUses: spec.toolUses.map((u) => ({ name: u.name, input: fillDeep(u.input, ctx) as Record<string, unknown> })) }),
  };
}
