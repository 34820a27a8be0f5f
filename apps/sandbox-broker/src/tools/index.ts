/**
 * The sandbox tools by name: the set the harness offers the model (the Managed Agents toolset).
 * An unknown tool or bad input is a tool result with is_error, for the model to read and fix;
 * only a sandbox that is gone surfaces as an exception (the caller reports it as lost).
 */
import { bashTool } from "./bash.js";
import { editTool, readTool, writeTool } from "./files.js";
import { globTool, grepTool } from "./search.js";
import { ToolError, failed, type Input, type Tool, type ToolContext, type ToolOutcome } from "./types.js";

export const TOOLS: Readonly<Record<string, Tool>> = {
  bash: bashTool,
  read: readTool,
  write: writeTool,
  edit: editTool,
  glob: globTool,
  grep: grepTool,
};

export const TOOL_NAMES: readonly string[] = Object.keys(TOOLS);

/** Runs tool `name`; rethrows only SandboxGoneError (and bugs): everything else is a result. */
export async function runTool(name: string, input: Input, ctx: ToolContext): Promise<ToolOutcome> {
  const tool = Object.hasOwn(TOOLS, name) ? TOOLS[name] : undefined;
  if (tool === undefined) {
    return failed(`unknown tool "${name}": this sandbox offers ${TOOL_NAMES.join(", ")}`);
  }
  try {
    return await tool(input, ctx);
  } catch (err) {
    if (err instanceof ToolError) return failed(err.message);
    throw err; // SandboxGoneError: the caller reports the sandbox as gone
  }
}

export type { SandboxOps, ToolContext, ToolOutcome, RunOutcome } from "./types.js";
