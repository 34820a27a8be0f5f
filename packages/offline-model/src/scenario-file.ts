/**
 * Scenarios from a file named by config (MH_OFFLINE_MODEL_SCENARIOS). A `.json` file holds data
 * steps; a `.js`/`.mjs` module's default export may also hold step functions. Both map names to
 * steps: `{ "greet": [{ "text": "hi" }], "loop": { "steps": [...], "onExhausted": "repeat-last" } }`.
 * JSON text may use `{{last_user_text}}` and `{{last_tool_result}}` (see template.ts).
 */
import { readFile } from "node:fs/promises";
import { extname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { MhError, invalidArgument } from "@metaharness/errors";
import { defineScenario, type Scenario, type Step } from "./scenario.js";

/** Parses the name → steps map a scenario file holds. */
export function scenariosFrom(value: unknown, source: string): Scenario[] {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalidArgument(source, "a scenario file must map scenario names to steps");
  }
  return Object.entries(value).map(([name, entry]: [string, unknown]) => {
    if (Array.isArray(entry)) return defineScenario(name, entry as Step[]);
    if (typeof entry === "object" && entry !== null && Array.isArray((entry as { steps?: unknown }).steps)) {
      const { steps, onExhausted } = entry as { steps: Step[]; onExhausted?: unknown };
      if (onExhausted !== undefined && onExhausted !== "error" && onExhausted !== "repeat-last") {
        throw invalidArgument(`${name}.onExhausted`, 'must be "error" or "repeat-last"');
      }
      return defineScenario(name, steps, onExhausted === undefined ? {} : { onExhausted });
    }
    throw invalidArgument(name, "must be an array of steps or { steps, onExhausted }");
  });
}

export async function loadScenarioFile(file: string): Promise<Scenario[]> {
  const absolute = resolve(file);
  const ext = extname(absolute);
  try {
    if (ext === ".json") return scenariosFrom(JSON.parse(await readFile(absolute, "utf8")), absolute);
    if (ext === ".js" || ext === ".mjs") {
      const mod = (await import(pathToFileURL(absolute).href)) as { default?: unknown };
      return scenariosFrom(mod.default, absolute);
    }
  } catch (err) {
    if (err instanceof MhError) throw new MhError(err.code, `${absolute}: ${err.message}`, { field: err.field, cause: err });
    throw new MhError("INVALID_ARGUMENT", `cannot load scenarios from ${absolute}: ${String(err)}`, { cause: err });
  }
  throw invalidArgument("scenarios", `${absolute}: expected a .json, .js or .mjs file`);
}
