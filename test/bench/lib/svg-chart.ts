/**
 * A small SVG chart of latency distributions, written by a benchmark with no plotting dependency:
 * panels side by side (small multiples), each with its x values evenly spaced and labelled, and
 * per series a line through the p50s, a bar from p50 to p95 and a tick at p99, with an optional
 * dashed reference line (e.g. the model's own TTFT). Made for people who would rather look than read.
 */

export interface ChartPoint {
  readonly x: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
}

export interface ChartSeries {
  readonly label: string;
  readonly color: string;
  readonly points: readonly ChartPoint[];
}

export interface ChartPanel {
  readonly title: string;
  readonly series: readonly ChartSeries[];
  /** A dashed line through these points, labelled `referenceLabel`. */
  readonly reference?: ReadonlyArray<{ readonly x: number; readonly y: number }>;
}

export interface Chart {
  readonly title: string;
  /** Lines under the title: the parameters and the machine. */
  readonly notes: readonly string[];
  readonly xLabel: string;
  readonly yLabel: string;
  readonly referenceLabel?: string;
  readonly panels: readonly ChartPanel[];
}

const PANEL_W = 300;
const PANEL_H = 240;
const PAD = { left: 56, right: 16, top: 28, bottom: 40 };
const COLUMNS = 3;

const esc = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const num = (x: number): string => (Math.round(x * 10) / 10).toString();

/** A round step for about five ticks up to `max`. */
function tickStep(max: number): number {
  const raw = max / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
}

function panel(p: ChartPanel, ox: number, oy: number, referenceLabel: string | undefined): string {
  const xs = [...new Set(p.series.flatMap((s) => s.points.map((q) => q.x)))].sort((a, b) => a - b);
  const ys = p.series.flatMap((s) => s.points.flatMap((q) => [q.p99, q.p95])).concat((p.reference ?? []).map((r) => r.y)).filter(Number.isFinite);
  const yMax = Math.max(1, ...ys) * 1.05;
  const step = tickStep(yMax);
  const w = PANEL_W - PAD.left - PAD.right;
  const h = PANEL_H - PAD.top - PAD.bottom;
  const px = (x: number): number => ox + PAD.left + (xs.length <= 1 ? w / 2 : (xs.indexOf(x) / (xs.length - 1)) * w * 0.9 + w * 0.05);
  const py = (y: number): number => oy + PAD.top + h - (Math.min(y, yMax) / yMax) * h;
  const out: string[] = [`<text x="${num(ox + PANEL_W / 2)}" y="${num(oy + 16)}" text-anchor="middle" font-weight="bold">${esc(p.title)}</text>`];
  out.push(`<rect x="${num(ox + PAD.left)}" y="${num(oy + PAD.top)}" width="${w}" height="${h}" fill="none" stroke="#999"/>`);
  for (let t = 0; t <= yMax; t += step) {
    out.push(`<line x1="${num(ox + PAD.left)}" x2="${num(ox + PAD.left + w)}" y1="${num(py(t))}" y2="${num(py(t))}" stroke="#eee"/>`);
    out.push(`<text x="${num(ox + PAD.left - 4)}" y="${num(py(t) + 4)}" text-anchor="end">${num(t)}</text>`);
  }
  for (const x of xs) out.push(`<text x="${num(px(x))}" y="${num(oy + PAD.top + h + 16)}" text-anchor="middle">${num(x)}</text>`);
  if (p.reference !== undefined && p.reference.length > 0) {
    const pts = p.reference.filter((r) => xs.includes(r.x)).map((r) => `${num(px(r.x))},${num(py(r.y))}`);
    out.push(`<polyline points="${pts.join(" ")}" fill="none" stroke="#555" stroke-dasharray="4 3"><title>${esc(referenceLabel ?? "reference")}</title></polyline>`);
  }
  p.series.forEach((s, i) => {
    const shift = (i - (p.series.length - 1) / 2) * 6;
    const pts = s.points.filter((q) => Number.isFinite(q.p50));
    out.push(`<polyline points="${pts.map((q) => `${num(px(q.x) + shift)},${num(py(q.p50))}`).join(" ")}" fill="none" stroke="${s.color}" stroke-width="1.5"/>`);
    for (const q of pts) {
      const x = num(px(q.x) + shift);
      const tip = `${s.label}, x=${num(q.x)}: p50 ${num(q.p50)}, p95 ${num(q.p95)}, p99 ${num(q.p99)} ms`;
      out.push(`<g><title>${esc(tip)}</title>`);
      out.push(`<line x1="${x}" x2="${x}" y1="${num(py(q.p50))}" y2="${num(py(q.p95))}" stroke="${s.color}" stroke-width="4" opacity="0.5"/>`);
      out.push(`<line x1="${num(px(q.x) + shift - 3)}" x2="${num(px(q.x) + shift + 3)}" y1="${num(py(q.p99))}" y2="${num(py(q.p99))}" stroke="${s.color}" stroke-width="1.5"/>`);
      out.push(`<circle cx="${x}" cy="${num(py(q.p50))}" r="2.5" fill="${s.color}"/></g>`);
    }
  });
  return out.join("\n");
}

export function svgChart(chart: Chart): string {
  const rows = Math.ceil(chart.panels.length / COLUMNS);
  const cols = Math.min(COLUMNS, chart.panels.length);
  const head = 40 + chart.notes.length * 14;
  const width = Math.max(cols * PANEL_W, 600);
  const height = head + rows * PANEL_H + 40;
  const body = chart.panels.map((p, i) => panel(p, (i % COLUMNS) * PANEL_W, head + Math.floor(i / COLUMNS) * PANEL_H, chart.referenceLabel));
  const legend = [...new Map(chart.panels.flatMap((p) => p.series.map((s) => [s.label, s.color] as const))).entries()];
  const ly = height - 16;
  const legendItems = legend.map(
    ([label, color], i) => `<rect x="${20 + i * 200}" y="${ly - 9}" width="12" height="10" fill="${color}"/><text x="${36 + i * 200}" y="${ly}">${esc(label)}</text>`,
  );
  if (chart.referenceLabel !== undefined) {
    const x = 20 + legend.length * 200;
    legendItems.push(`<line x1="${x}" x2="${x + 20}" y1="${ly - 4}" y2="${ly - 4}" stroke="#555" stroke-dasharray="4 3"/><text x="${x + 26}" y="${ly}">${esc(chart.referenceLabel)}</text>`);
  }
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${esc(chart.title)}</text>`,
    ...chart.notes.map((n, i) => `<text x="10" y="${36 + i * 14}" fill="#444">${esc(n)}</text>`),
    ...body,
    `<text x="${width / 2}" y="${height - 28}" text-anchor="middle">${esc(chart.xLabel)}; y: ${esc(chart.yLabel)}; dot and line p50, bar to p95, tick p99</text>`,
    ...legendItems,
    `</svg>`,
    "",
  ].join("\n");
}
