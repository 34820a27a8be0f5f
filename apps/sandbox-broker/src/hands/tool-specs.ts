/**
 * A hand's tools as a model is offered them: a registration names them (tools) and/or describes
 * them (tool_specs); both are checked here, naming the field at fault, and merged into one list
 * of specs, so a hand that gives only names still gets a spec ("takes any object").
 */
import { invalidArgument } from "@metaharness/errors";
import type { HandRegistration, HandTool } from "@metaharness/proto";

export const HAND_NAME = /^[A-Za-z0-9._:-]{1,128}$/;
export const MAX_HAND_TOOLS = 256;
export const MAX_HAND_TOOL_DESCRIPTION = 4096;
/** A schema's JSON, bounded so one hand cannot bloat every model call of its sessions. */
export const MAX_HAND_TOOL_SCHEMA_BYTES = 16_384;

const ANY_OBJECT = { type: "object" } as const;

/** Checks the registration's tools and tool_specs; throws INVALID_ARGUMENT naming the field. */
export function checkToolSpecs(r: HandRegistration): void {
  if (r.tools.length + r.toolSpecs.length === 0) throw invalidArgument("register.tools", "a hand offers at least one tool");
  if (r.tools.length + r.toolSpecs.length > MAX_HAND_TOOLS) throw invalidArgument("register.tools", `at most ${MAX_HAND_TOOLS} tools`);
  r.tools.forEach((t, i) => {
    if (!HAND_NAME.test(t)) throw invalidArgument(`register.tools[${i}]`, "must be 1-128 of [A-Za-z0-9._:-]");
  });
  const seen = new Set<string>();
  r.toolSpecs.forEach((t, i) => {
    const at = `register.tool_specs[${i}]`;
    if (!HAND_NAME.test(t.name)) throw invalidArgument(`${at}.name`, "must be 1-128 of [A-Za-z0-9._:-]");
    if (seen.has(t.name)) throw invalidArgument(`${at}.name`, `${t.name} is described twice`);
    seen.add(t.name);
    if (t.description.length > MAX_HAND_TOOL_DESCRIPTION) {
      throw invalidArgument(`${at}.description`, `at most ${MAX_HAND_TOOL_DESCRIPTION} characters`);
    }
    if (t.inputSchema !== undefined) {
      if (t.inputSchema["type"] !== "object") throw invalidArgument(`${at}.input_schema.type`, 'must be "object"');
      if (Buffer.byteLength(JSON.stringify(t.inputSchema)) > MAX_HAND_TOOL_SCHEMA_BYTES) {
        throw invalidArgument(`${at}.input_schema`, `at most ${MAX_HAND_TOOL_SCHEMA_BYTES} bytes of JSON`);
      }
    }
  });
}

/** The registration's tools as specs, described ones first as given, then names alone. */
export function toolSpecsOf(r: HandRegistration): HandTool[] {
  const specs = r.toolSpecs.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema ?? { ...ANY_OBJECT } }));
  const described = new Set(specs.map((t) => t.name));
  for (const name of new Set(r.tools)) {
    if (!described.has(name)) specs.push({ name, description: "", inputSchema: { ...ANY_OBJECT } });
  }
  return specs;
}
