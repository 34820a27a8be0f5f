/**
 * How values read on the page: durations, token counts, times, and long text cut to a preview.
 * Pure functions, shared by the list and the timeline, and tested without a browser.
 */

/** `850 ms`, `1.24 s`, `2 min 05 s`, `1 h 02 min`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} min`;
}

/** Whole seconds, as the API counts active time: `0 s`, `42 s`, `2 min 05 s`. */
export function formatSeconds(seconds: number | undefined): string {
  const s = Math.max(0, Math.round(seconds ?? 0));
  return s < 60 ? `${s} s` : formatDuration(s * 1000);
}

/** `950`, `12.3k`, `4.56M`. */
export function formatTokens(n: number | undefined): string {
  const v = n ?? 0;
  if (v < 1000) return String(v);
  if (v < 1_000_000) return `${(v / 1000).toFixed(v < 10_000 ? 2 : 1)}k`;
  return `${(v / 1_000_000).toFixed(2)}M`;
}

const pad = (n: number, width = 2): string => String(n).padStart(width, "0");

/** Local wall-clock time with milliseconds: `14:03:07.120`. */
export function formatClock(iso: string | null | undefined): string {
  if (iso === null || iso === undefined) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** Local date and time to the second: `2026-11-29 14:03:07`. */
export function formatDateTime(iso: string | null | undefined): string {
  if (iso === null || iso === undefined) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "—";
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** `just now`, `42 s ago`, `5 min ago`, `3 h ago`, `2 d ago`. */
export function formatAgo(iso: string | null | undefined, now: number): string {
  if (iso === null || iso === undefined) return "—";
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return "—";
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 5) return "just now";
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

/** Milliseconds between two ISO times, or undefined when either is missing. */
export function between(from: string | null | undefined, to: string | null | undefined): number | undefined {
  if (from === null || from === undefined || to === null || to === undefined) return undefined;
  const ms = new Date(to).getTime() - new Date(from).getTime();
  return Number.isNaN(ms) ? undefined : ms;
}

export function countLines(text: string): number {
  if (text === "") return 0;
  let n = 1;
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) n += 1;
  return text.endsWith("\n") ? n - 1 : n;
}

/** `1 line, 12 chars`, `240 lines, 14.2k chars`. */
export function describeSize(text: string): string {
  const lines = countLines(text);
  const chars = text.length;
  const size = chars < 1000 ? `${chars} chars` : `${(chars / 1000).toFixed(1)}k chars`;
  return `${lines} ${lines === 1 ? "line" : "lines"}, ${size}`;
}

/** Text past these limits is shown as an excerpt, with a button to show it whole. */
export const CLAMP_LINES = 16;
export const CLAMP_CHARS = 2400;
/** What an excerpt keeps: a few lines of the start, more of the end (where errors usually are). */
export const EXCERPT_HEAD_LINES = 4;
export const EXCERPT_TAIL_LINES = 10;
export const EXCERPT_HEAD_CHARS = 400;
export const EXCERPT_TAIL_CHARS = 1200;

export function isLong(text: string): boolean {
  return text.length > CLAMP_CHARS || countLines(text) > CLAMP_LINES;
}

export interface Excerpt {
  readonly head: string;
  readonly tail: string;
  /** Lines (or, in a text of few lines, characters) the excerpt leaves out. */
  readonly hidden: string;
}

/**
 * The start and the end of a long text: by lines, or by characters when a few lines hold it
 * all (minified JSON, a long log line). Cut at a line (or character) boundary, never mid-way
 * through a multi-byte character pair.
 */
export function excerpt(text: string): Excerpt {
  const lines = text.split("\n");
  if (text.endsWith("\n")) lines.pop();
  const byLines = lines.length > EXCERPT_HEAD_LINES + EXCERPT_TAIL_LINES + 2;
  if (byLines) {
    const head = lines.slice(0, EXCERPT_HEAD_LINES).join("\n");
    const tail = lines.slice(-EXCERPT_TAIL_LINES).join("\n");
    if (head.length + tail.length <= EXCERPT_HEAD_CHARS + EXCERPT_TAIL_CHARS) {
      const n = lines.length - EXCERPT_HEAD_LINES - EXCERPT_TAIL_LINES;
      return { head, tail, hidden: `${n} lines` };
    }
  }
  const chars = [...text];
  const n = Math.max(0, chars.length - EXCERPT_HEAD_CHARS - EXCERPT_TAIL_CHARS);
  return { head: chars.slice(0, EXCERPT_HEAD_CHARS).join(""), tail: chars.slice(-EXCERPT_TAIL_CHARS).join(""), hidden: `${n} characters` };
}

/** JSON for reading: two-space indents; a plain string as itself. */
export function prettyJson(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** The trace link of an event: the template with its id, or undefined without a trace. */
export function traceUrl(template: string, traceId: string | undefined, spanId: string | undefined): string | undefined {
  if (traceId === undefined || !/^[0-9a-f]{32}$/.test(traceId)) return undefined;
  return template.replaceAll("{trace_id}", traceId).replaceAll("{span_id}", spanId ?? "");
}
