/**
 * The geometry and words of the trace waterfall: where a span's bar sits on the trace's time
 * line (percentages, so the page needs no measuring), the axis ticks, and microseconds written
 * for reading. Pure functions, tested without a browser.
 */
import { formatDuration } from "./format.js";

/** Bars narrower than this (% of the track) are drawn this wide, so a 10 µs span stays visible. */
export const MIN_BAR_PERCENT = 0.4;
/** A bar ending past this (%) has its duration written to its left (or inside it), within the track. */
const LABEL_FLIP_PERCENT = 75;
/** Room (%) a duration needs left of its bar; a long bar without it has its duration inside. */
const LABEL_ROOM_PERCENT = 12;
/** Distinct bar colours (CSS classes span-bar--c0 ...), assigned to services in order. */
export const SERVICE_COLOURS = 8;

export interface BarPlacement {
  /** % of the track from its left edge. */
  readonly left: number;
  readonly width: number;
  /** Where the duration goes: after the bar; before it when the bar ends near the right edge; else inside it. */
  readonly labelSide: "after" | "before" | "inside";
}

const clamp = (n: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, n));
/** Four decimals are plenty for a percentage, and keep the CSS short. */
const round = (n: number): number => Math.round(n * 10_000) / 10_000;

/** The bar of a span starting `startUs` into a trace of `totalUs`, lasting `durationUs`. */
export function barPlacement(startUs: number, durationUs: number, totalUs: number): BarPlacement {
  if (!(totalUs > 0)) return { left: 0, width: 100, labelSide: "inside" };
  const left = clamp((startUs / totalUs) * 100, 0, 100 - MIN_BAR_PERCENT);
  const width = clamp((durationUs / totalUs) * 100, MIN_BAR_PERCENT, 100 - left);
  const labelSide = left + width <= LABEL_FLIP_PERCENT ? "after" : left >= LABEL_ROOM_PERCENT ? "before" : "inside";
  return { left: round(left), width: round(width), labelSide };
}

/** `12 µs`, `2.35 ms`, `48.2 ms`, `850 ms`, `1.24 s`, `2 min 05 s`. */
export function formatMicros(us: number): string {
  if (!Number.isFinite(us) || us < 0) return "—";
  if (us < 1000) return `${Math.round(us)} µs`;
  if (us < 10_000) return `${(us / 1000).toFixed(2)} ms`;
  if (us < 100_000) return `${(us / 1000).toFixed(1)} ms`;
  return formatDuration(us / 1000);
}

/** `+0 µs`, `+12.5 ms`: an offset from the trace's start. */
export function formatOffset(us: number): string {
  return `+${formatMicros(us)}`;
}

export interface Tick {
  /** % of the track. */
  readonly at: number;
  readonly label: string;
}

/** `parts + 1` evenly spaced ticks from the trace's start to its end. */
export function ticks(totalUs: number, parts = 4): Tick[] {
  return Array.from({ length: parts + 1 }, (_, i) => ({ at: (i / parts) * 100, label: formatMicros((totalUs * i) / parts) }));
}

/** A colour class index per service, in the order given (the trace's services, sorted). */
export function serviceColours(services: readonly string[]): Map<string, number> {
  return new Map(services.map((s, i) => [s, i % SERVICE_COLOURS]));
}
