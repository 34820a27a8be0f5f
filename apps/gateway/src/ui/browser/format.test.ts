/**
 * How the page writes numbers, times and long text.
 */
import { describe, expect, it } from "vitest";
import { countLines, describeSize, excerpt, EXCERPT_HEAD_CHARS, EXCERPT_TAIL_CHARS, formatAgo, formatDuration, formatSeconds, formatTokens, isLong, traceUrl } from "./format.js";

describe("format", () => {
  it("writes durations, seconds and token counts", () => {
    expect([850, 1240, 12_500, 125_000, 3_720_000].map(formatDuration)).toEqual(["850 ms", "1.24 s", "12.5 s", "2 min 05 s", "1 h 02 min"]);
    expect(formatDuration(-1)).toBe("—");
    expect([0, 42, 125].map(formatSeconds)).toEqual(["0 s", "42 s", "2 min 05 s"]);
    expect([950, 1830, 12_345, 4_560_000].map(formatTokens)).toEqual(["950", "1.83k", "12.3k", "4.56M"]);
  });

  it("says how long ago", () => {
    const now = Date.parse("2026-01-01T12:00:00Z");
    expect(formatAgo("2026-01-01T11:59:58Z", now)).toBe("just now");
    expect(formatAgo("2026-01-01T11:55:00Z", now)).toBe("5 min ago");
    expect(formatAgo(null, now)).toBe("—");
  });

  it("counts lines and sizes", () => {
    expect([countLines(""), countLines("a"), countLines("a\nb\n"), countLines("a\n\nb")]).toEqual([0, 1, 2, 3]);
    expect(describeSize("a\nb")).toBe("2 lines, 3 chars");
  });

  it("cuts long text to its start and its end, by lines or by characters", () => {
    const lines = Array.from({ length: 64 }, (_, i) => `line ${i}`).join("\n");
    expect(isLong(lines)).toBe(true);
    const byLines = excerpt(lines);
    expect(byLines.head.split("\n")).toEqual(["line 0", "line 1", "line 2", "line 3"]);
    expect(byLines.tail.split("\n").at(-1)).toBe("line 63");
    expect(byLines.hidden).toBe("50 lines");

    const oneLine = "x".repeat(10_000) + "END";
    const byChars = excerpt(oneLine);
    expect(byChars.head).toHaveLength(EXCERPT_HEAD_CHARS);
    expect(byChars.tail.endsWith("END")).toBe(true);
    expect(byChars.hidden).toBe(`${10_003 - EXCERPT_HEAD_CHARS - EXCERPT_TAIL_CHARS} characters`);
    expect(isLong("short")).toBe(false);
  });

  it("fills in the trace link, only for a real trace id", () => {
    const t = "4bf92f3577b34da6a3ce929d0e0e4736";
    expect(traceUrl("http://jaeger/trace/{trace_id}?uiFind={span_id}", t, "00f067aa0ba902b7")).toBe(`http://jaeger/trace/${t}?uiFind=00f067aa0ba902b7`);
    expect(traceUrl("http://jaeger/trace/{trace_id}", undefined, undefined)).toBeUndefined();
    expect(traceUrl("http://jaeger/trace/{trace_id}", "not-hex", undefined)).toBeUndefined();
  });
});
