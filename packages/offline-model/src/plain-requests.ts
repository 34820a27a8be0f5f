/**
 * What the offline model does with a plain request when no scenario is named: "list the files",
 * "run <command>" (quoted or not), "read <file>". Each becomes one call of a tool
 * the request offers (bash, read), so that a first `mh run` without an API key does something
 * real in the sandbox; anything else is answered in words (default-scenario.ts). A pure function
 * of the text and the offered tools, like every step, so a resent request gets the same answer.
 */
import type { ToolUseSpec } from "./scenario.js";
import type { ToolParam } from "./wire.js";

/** The longest command or path taken from a request; longer text is not a plain request. */
export const MAX_PLAIN_ARGUMENT_CHARS = 500;

const POLITE = /^(?:please\s+|can you\s+|could you\s+)?/i;
/** "list the files", "list files in /etc", "ls", "show me the files of the sandbox". */
const LIST = /^(?:list|show(?: me)?)\s+(?:all\s+)?(?:the\s+)?(?:files|contents)(?:\s+(?:of|in)\s+(.+?))?\s*[.!?]?$|^(?:ls|list(?: your)? (?:sandbox|workspace))\s*$/i;
/** "run uname -a", "run the command `ls`", "execute: date". */
const RUN = /^(?:run|execute)(?:\s+the\s+command)?[:\s]\s*(.+?)\s*$/i;
/** "read README.md", "read the file /etc/os-release", "cat x", "show the file x". */
const READ = /^(?:read|cat|open|show(?: me)? the file)(?:\s+the\s+file)?\s+(\S+?)\s*[.!?]?$/i;

/** The sandbox's working directory, where a relative path is taken from. */
const WORKSPACE = "/workspace";

/** The tool call a plain request asks for, if it is one and the request offers the tool. */
export function plainToolUse(text: string, tools: readonly ToolParam[] | undefined): ToolUseSpec | undefined {
  const said = text.trim().replace(POLITE, "");
  if (said === "" || said.includes("\n")) return undefined;
  const offered = (name: string): ToolParam | undefined => tools?.find((t) => t.name === name);
  const bash = offered("bash");

  const list = LIST.exec(said);
  if (list !== null && bash !== undefined) {
    const where = unquote(list[1] ?? "");
    const dir = where === "" || /^(?:the\s+)?(?:sandbox|workspace)$/i.test(where) ? "" : ` ${shellWord(where)}`;
    return { name: "bash", input: { command: `ls -la${dir}` } };
  }
  const read = READ.exec(said);
  const readTool = offered("read");
  if (read !== null && readTool !== undefined && looksLikePath(read[1] ?? "")) {
    const path = unquote(read[1] ?? "");
    return { name: "read", input: { [pathField(readTool)]: path.startsWith("/") ? path : `${WORKSPACE}/${path}` } };
  }
  const command = unquote(RUN.exec(said)?.[1] ?? "");
  // "run the tests" names no command: that is for a real model.
  if (bash !== undefined && command !== "" && command.length <= MAX_PLAIN_ARGUMENT_CHARS && !/^(?:the|a|an|my|some|all)\s/i.test(command)) {
    return { name: "bash", input: { command } };
  }
  return undefined;
}

function unquote(text: string): string {
  const t = text.trim().replace(/[.!?]$/, "");
  return /^(["'`]).*\1$/.test(t) ? t.slice(1, -1) : t;
}

function looksLikePath(text: string): boolean {
  const t = unquote(text);
  return t.length > 0 && t.length <= MAX_PLAIN_ARGUMENT_CHARS && /[./]/.test(t) && !/\s/.test(t);
}

/** The sandbox's read tool takes `path`; the SDK's worker toolset takes `file_path`. */
function pathField(tool: ToolParam): string {
  const properties = (tool.input_schema?.["properties"] ?? {}) as Record<string, unknown>;
  return "file_path" in properties && !("path" in properties) ? "file_path" : "path";
}

/** `value` as one word of a POSIX shell's command line. */
function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}
