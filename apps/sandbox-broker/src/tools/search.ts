/**
 * glob and grep, run as processes inside the sandbox (GNU find and grep from its read-only /usr),
 * so the walk sees exactly what the sandbox sees and never follows a link out of it into the
 * host. The broker filters, sorts and caps what they print. Like the official toolset, .git and
 * node_modules are skipped and glob lists newest files first.
 */
import { posix } from "node:path";
import { SANDBOX_ENV, WORKSPACE } from "../inside/view.js";
import { globToRegExp } from "./glob-pattern.js";
import { optionalBool, optionalInt, optionalString, requiredString, sandboxPath } from "./input.js";
import { endingNote, outputText } from "./output.js";
import { ToolError, ok, type Input, type ToolContext, type ToolOutcome } from "./types.js";

export const GLOB_RESULT_LIMIT = 200;
const LISTING_CAP_BYTES = 4 * 1024 * 1024;
const SEARCH_TIMEOUT_MS = 60_000;
const SKIPPED_DIRS = [".git", "node_modules"];

export async function globTool(input: Input, ctx: ToolContext): Promise<ToolOutcome> {
  const pattern = requiredString("glob", input, "pattern");
  if (pattern === "") throw new ToolError("glob: pattern is empty");
  if (pattern.startsWith("/")) throw new ToolError("glob: absolute pattern not permitted; pass a relative pattern (and optionally path)");
  if (pattern.split(/[\\/{},]/).includes("..")) throw new ToolError('glob: ".." is not permitted in the pattern');
  const root = sandboxPath("glob", optionalString("glob", input, "path") ?? WORKSPACE);
  const matcher = globToRegExp(pattern);
  const prune = SKIPPED_DIRS.flatMap((d, i) => (i === 0 ? ["-name", d] : ["-o", "-name", d]));
  const result = await ctx.ops.run({
    timeoutMs: Math.min(ctx.timeoutMs, SEARCH_TIMEOUT_MS),
    capBytes: LISTING_CAP_BYTES,
    graceMs: 0,
    cwd: WORKSPACE,
    argv: ["/usr/bin/find", root, "-xdev", "(", ...prune, ")", "-prune", "-o", "-type", "f", "-printf", "%T@\t%P\n"],
    env: SANDBOX_ENV,
  });
  const listing = result.head.toString("utf8");
  const matches: Array<{ path: string; mtime: number }> = [];
  for (const line of listing.split("\n")) {
    // find's complaints (unreadable dirs) share the pipe; they lack the "<mtime>\t" prefix.
    const m = /^(\d+(?:\.\d+)?)\t(.+)$/.exec(line);
    if (m?.[2] === undefined || !matcher.test(m[2])) continue;
    matches.push({ path: posix.join(root, m[2]), mtime: Number(m[1]) });
  }
  if (matches.length === 0) {
    if (result.kind === "exited" && result.code !== 0 && !listing.includes("\t")) {
      throw new ToolError(`glob: ${listing.trim() || `cannot search ${root}`}`);
    }
    return ok("no matches");
  }
  matches.sort((a, b) => b.mtime - a.mtime);
  const lines = matches.slice(0, GLOB_RESULT_LIMIT).map((m) => m.path);
  if (matches.length > GLOB_RESULT_LIMIT) lines.push(`[${matches.length - GLOB_RESULT_LIMIT} more matches not shown]`);
  if (result.totalBytes > result.head.length + result.tail.length || result.timedOut) {
    lines.push("[the search stopped early: too many files; narrow path or pattern]");
  }
  return ok(lines.join("\n"));
}

const OUTPUT_MODES = ["content", "files_with_matches", "count"] as const;
type OutputMode = (typeof OUTPUT_MODES)[number];

export async function grepTool(input: Input, ctx: ToolContext): Promise<ToolOutcome> {
  const pattern = requiredString("grep", input, "pattern");
  if (pattern === "") throw new ToolError("grep: pattern is empty");
  const root = sandboxPath("grep", optionalString("grep", input, "path") ?? WORKSPACE);
  const include = optionalString("grep", input, "glob", "include");
  const ignoreCase = optionalBool("grep", input, "case_insensitive", "-i", "ignore_case");
  const context = optionalInt("grep", input, 0, "context", "-C");
  const headLimit = optionalInt("grep", input, 1, "head_limit");
  const mode = (optionalString("grep", input, "output_mode") ?? "content") as OutputMode;
  if (!OUTPUT_MODES.includes(mode)) throw new ToolError(`grep: output_mode must be one of ${OUTPUT_MODES.join(", ")}`);

  const argv = ["/usr/bin/grep", "-r", "-I", "-P", "--color=never", ...SKIPPED_DIRS.map((d) => `--exclude-dir=${d}`)];
  if (mode === "content") argv.push("-n");
  if (mode === "files_with_matches") argv.push("-l");
  if (mode === "count") argv.push("-c");
  if (ignoreCase) argv.push("-i");
  if (context !== undefined && mode === "content") argv.push(`-C${context}`);
  if (include !== undefined) argv.push(`--include=${include}`);
  argv.push("-e", pattern, "--", root);

  const result = await ctx.ops.run({
    timeoutMs: Math.min(ctx.timeoutMs, SEARCH_TIMEOUT_MS),
    capBytes: ctx.outputCapBytes,
    graceMs: 0,
    cwd: WORKSPACE,
    argv,
    env: SANDBOX_ENV,
  });
  const { text, truncated } = outputText(result, ctx.outputCapBytes);
  if (result.timedOut || result.kind !== "exited") {
    throw new ToolError(`grep: ${endingNote(result, Math.min(ctx.timeoutMs, SEARCH_TIMEOUT_MS), 0) ?? "failed"}`);
  }
  if (result.code === 1) return ok("no matches");
  if (result.code !== 0) throw new ToolError(`grep: ${text.trim() || `exit code ${result.code}`}`);
  let lines = text.replace(/\n+$/, "").split("\n");
  // -c lists every file, matching or not; only the ones that match are news.
  if (mode === "count") lines = lines.filter((l) => !l.endsWith(":0"));
  if (headLimit !== undefined && lines.length > headLimit) {
    lines = [...lines.slice(0, headLimit), `[${lines.length - headLimit} more lines not shown (head_limit)]`];
  }
  return { output: lines.join("\n"), isError: false, exitCode: 0, truncated };
}
