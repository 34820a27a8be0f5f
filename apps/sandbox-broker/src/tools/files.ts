/**
 * read, write and edit. The agent inside the sandbox does the filesystem work (open with
 * O_NONBLOCK so a planted FIFO cannot hang it, write beside the target and rename over it, so a
 * planted symlink is replaced rather than followed); the broker only transforms bytes. Whole-file
 * reads and edits are capped like the official toolset's; a line range reads past the cap.
 */
import { lineRange, optionalBool, requiredString, sandboxPath } from "./input.js";
import { ToolError, ok, type Input, type ToolContext, type ToolOutcome } from "./types.js";

const PATH_KEYS = ["file_path", "path"] as const;

async function load(tool: string, shown: string, path: string, ctx: ToolContext, range?: { start: number; end: number }): Promise<Buffer> {
  const res = await ctx.ops.get({
    path,
    maxBytes: ctx.maxFileBytes,
    startLine: range?.start ?? 0,
    endLine: range?.end ?? 0,
  });
  if (res.ok) return res.data;
  if (res.error === "too large") {
    throw new ToolError(
      tool === "read"
        ? `read: ${shown} is ${res.size} bytes, exceeds the ${ctx.maxFileBytes}-byte limit. Read part of it with view_range: [start_line, end_line]`
        : `${tool}: ${shown} is ${res.size} bytes, exceeds the ${ctx.maxFileBytes}-byte limit; ${tool} cannot change a file this large`,
    );
  }
  if (res.error === "range too large") {
    throw new ToolError(`${tool}: the lines asked for of ${shown} exceed the ${ctx.maxFileBytes}-byte limit; ask for fewer`);
  }
  throw new ToolError(`${tool}: ${res.error}`);
}

function text(tool: string, shown: string, data: Buffer): string {
  if (data.includes(0)) throw new ToolError(`${tool}: ${shown} is a binary file (${data.length} bytes)`);
  return data.toString("utf8");
}

export async function readTool(input: Input, ctx: ToolContext): Promise<ToolOutcome> {
  const shown = requiredString("read", input, ...PATH_KEYS);
  const path = sandboxPath("read", shown);
  const range = lineRange("read", input);
  const data = text("read", shown, await load("read", shown, path, ctx, range));
  return ok(range === undefined ? data : data.replace(/\n$/, ""));
}

export async function writeTool(input: Input, ctx: ToolContext): Promise<ToolOutcome> {
  const shown = requiredString("write", input, ...PATH_KEYS);
  const content = requiredString("write", input, "content");
  const bytes = Buffer.from(content, "utf8");
  const res = await ctx.ops.put({ path: sandboxPath("write", shown), mode: 0, content: bytes });
  if (!res.ok) throw new ToolError(`write: ${res.error}`);
  return ok(`wrote ${bytes.length} bytes to ${shown}`);
}

export async function editTool(input: Input, ctx: ToolContext): Promise<ToolOutcome> {
  const shown = requiredString("edit", input, ...PATH_KEYS);
  const oldString = requiredString("edit", input, "old_string");
  const newString = requiredString("edit", input, "new_string");
  const replaceAll = optionalBool("edit", input, "replace_all");
  if (oldString === "") throw new ToolError("edit: old_string is empty");
  if (oldString === newString) throw new ToolError("edit: old_string and new_string are the same");
  const path = sandboxPath("edit", shown);
  const data = text("edit", shown, await load("edit", shown, path, ctx));
  const count = data.split(oldString).length - 1;
  if (count === 0) throw new ToolError(`edit: old_string not found in ${shown}`);
  if (count > 1 && !replaceAll) {
    throw new ToolError(`edit: old_string appears ${count} times in ${shown} (must be unique, or set replace_all)`);
  }
  // split/join, not String.replace: `$&` and friends in new_string stay literal.
  const updated = replaceAll ? data.split(oldString).join(newString) : spliceOnce(data, oldString, newString);
  const res = await ctx.ops.put({ path, mode: 0, content: Buffer.from(updated, "utf8") });
  if (!res.ok) throw new ToolError(`edit: ${res.error}`);
  return ok(`edited ${shown} (${replaceAll ? count : 1} replacement(s))`);
}

function spliceOnce(data: string, oldString: string, newString: string): string {
  const at = data.indexOf(oldString);
  return data.slice(0, at) + newString + data.slice(at + oldString.length);
}
