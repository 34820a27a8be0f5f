/**
 * ANSI styles that fall back to plain text when colours are off, and the small text helpers the
 * renderers share (one-line clipping, thousands separators, durations).
 */

export interface Style {
  readonly bold: (s: string) => string;
  readonly dim: (s: string) => string;
  readonly red: (s: string) => string;
  readonly green: (s: string) => string;
  readonly yellow: (s: string) => string;
  readonly cyan: (s: string) => string;
}

const wrap = (open: number, close: number) => (s: string) => `\x1b[${open}m${s}\x1b[${close}m`;
const plain = (s: string): string => s;

export function style(color: boolean): Style {
  if (!color) return { bold: plain, dim: plain, red: plain, green: plain, yellow: plain, cyan: plain };
  return { bold: wrap(1, 22), dim: wrap(2, 22), red: wrap(31, 39), green: wrap(32, 39), yellow: wrap(33, 39), cyan: wrap(36, 39) };
}

/** The text on one line, cut to `max` characters with an ellipsis. */
/**
 * `text` from a session (a title, the model's words, a tool's output) without the control
 * characters a terminal obeys: an escape sequence in a message could retitle the window or clear
 * the screen. Line breaks and tabs stay.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, "");
}

export function clip(text: string, max: number): string {
  const flat = printable(text).replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, Math.max(max - 1, 0))}…` : flat;
}

/** 12345 -> "12,345". */
export function count(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

/** Milliseconds as a person reads them: "340 ms", "4.2 s", "3 min 05 s". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
}
