/**
 * How a tool call reads on one line (the tool and the part of its input that says what it does)
 * and how its output is shortened for a terminal: the first lines and the last ones (where test
 * runners print their totals), each cut to the screen's width.
 */
import { clip, printable } from "./style.js";

/** Lines of a tool's output shown; the middle of a longer one is left out. */
export const OUTPUT_LINES = { head: 6, tail: 2 } as const;

function str(input: Record<string, unknown>, key: string): string | undefined {
  const value = input[key];
  return typeof value === "string" ? value : undefined;
}

/** "bash  cd stats && bash test.sh", "edit  stats/lib/stats.sh", ... */
export function toolLabel(name: string, input: Record<string, unknown>, width: number): string {
  const path = str(input, "path") ?? str(input, "file_path");
  let what: string;
  switch (name) {
    case "bash":
      what = str(input, "command") ?? "";
      break;
    case "read":
    case "write":
    case "edit":
      what = path ?? "";
      break;
    case "glob":
    case "grep":
      what = [str(input, "pattern"), path].filter((s) => s !== undefined).join(" in ");
      break;
    default:
      what = JSON.stringify(input);
  }
  return `${name}  ${clip(what, Math.max(width - name.length - 2, 10))}`;
}

/** The output as at most head + tail lines (and one saying how many were left out). */
export function abbreviate(text: string, width: number, limits: { head: number; tail: number } = OUTPUT_LINES): string[] {
  const lines = printable(text).replace(/\n+$/, "").split("\n");
  if (lines.length === 1 && lines[0] === "") return [];
  const cut = (l: string) => (l.length > width ? `${l.slice(0, Math.max(width - 1, 1))}…` : l);
  if (lines.length <= limits.head + limits.tail + 1) return lines.map(cut);
  const left = lines.length - limits.head - limits.tail;
  return [...lines.slice(0, limits.head).map(cut), `… ${left} more lines`, ...lines.slice(-limits.tail).map(cut)];
}

/** The text blocks of a content array (tool results, messages), joined by newlines. */
export function contentText(content: unknown): string {
  if (!Array.isArray(content)) return "";
  const parts: string[] = [];
  for (const block of content as unknown[]) {
    if (typeof block !== "object" || block === null) continue;
    const b = block as { type?: unknown; text?: unknown };
    if (b.type === "text" && typeof b.text === "string") parts.push(b.text);
    else if (typeof b.type === "string") parts.push(`[${b.type}]`);
  }
  return parts.join("\n");
}
