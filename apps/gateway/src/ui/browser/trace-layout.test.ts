/**
 * The waterfall's geometry: bars placed by start and duration, always visible and inside the
 * track, their labels kept inside it; durations in readable units.
 */
import { describe, expect, it } from "vitest";
import { barPlacement, formatMicros, formatOffset, MIN_BAR_PERCENT, serviceColours, SERVICE_COLOURS, ticks } from "./trace-layout.js";

describe("barPlacement", () => {
  it("places a bar by its start and duration as percentages of the trace", () => {
    expect(barPlacement(10_000, 5_000, 50_000)).toEqual({ left: 20, width: 10, labelSide: "after" });
    expect(barPlacement(40_000, 2_000, 50_000)).toEqual({ left: 80, width: 4, labelSide: "before" });
  });

  it("writes a long bar's duration inside it when there is no room around it", () => {
    expect(barPlacement(0, 50_000, 50_000)).toEqual({ left: 0, width: 100, labelSide: "inside" });
    expect(barPlacement(2_000, 45_000, 50_000).labelSide).toBe("inside");
    expect(barPlacement(10_000, 40_000, 50_000).labelSide).toBe("before");
  });

  it("draws a very short span at a minimum width, still inside the track", () => {
    expect(barPlacement(25_000, 1, 50_000).width).toBe(MIN_BAR_PERCENT);
    const last = barPlacement(50_000, 0, 50_000);
    expect(last.left + last.width).toBeLessThanOrEqual(100);
    expect(last.width).toBe(MIN_BAR_PERCENT);
  });

  it("keeps a span that overruns the trace (clock skew) inside the track", () => {
    const p = barPlacement(45_000, 20_000, 50_000);
    expect(p.left).toBe(90);
    expect(p.width).toBe(10);
  });

  it("fills the track for a trace of zero length", () => {
    expect(barPlacement(0, 0, 0)).toEqual({ left: 0, width: 100, labelSide: "inside" });
  });
});

describe("formatMicros", () => {
  it("writes microseconds in the unit that reads best", () => {
    expect([12, 999, 2_345, 48_230, 850_000, 1_240_000, 125_000_000].map(formatMicros)).toEqual(["12 µs", "999 µs", "2.35 ms", "48.2 ms", "850 ms", "1.24 s", "2 min 05 s"]);
    expect(formatMicros(-1)).toBe("—");
    expect(formatOffset(12_500)).toBe("+12.5 ms");
  });
});

describe("ticks", () => {
  it("divides the trace into equal parts, from its start to its end", () => {
    expect(ticks(40_000)).toEqual([
      { at: 0, label: "0 µs" },
      { at: 25, label: "10.0 ms" },
      { at: 50, label: "20.0 ms" },
      { at: 75, label: "30.0 ms" },
      { at: 100, label: "40.0 ms" },
    ]);
  });
});

describe("serviceColours", () => {
  it("gives services colours in order, reusing them past the palette", () => {
    const services = Array.from({ length: SERVICE_COLOURS + 1 }, (_, i) => `s${i}`);
    const colours = serviceColours(services);
    expect(colours.get("s0")).toBe(0);
    expect(colours.get(`s${SERVICE_COLOURS}`)).toBe(0);
    expect(colours.get("s3")).toBe(3);
  });
});
