/**
 * A trace as a waterfall: one row per span in call order, its name indented under its parent,
 * a bar on the trace's time line placed by its start and duration, its duration written beside
 * it, errors marked in words as well as colour. A row is a disclosure button opening the span's
 * details below it; arrow keys move between rows. Positions are CSS custom properties set
 * through the CSSOM, which the page's CSP allows (it forbids style attributes).
 */
import type { TraceSpanView, TraceView } from "./wire.js";
import { h } from "./dom.js";
import { spanDetails } from "./span-details.js";
import { barPlacement, formatMicros, formatOffset, serviceColours, ticks } from "./trace-layout.js";

export interface Waterfall {
  readonly element: HTMLElement;
  /** The row of a span, when it is drawn. */
  row(spanId: string): HTMLLIElement | undefined;
  /** Opens (or closes) a row's details. */
  toggle(spanId: string, open: boolean): void;
}

function axis(totalUs: number): HTMLElement {
  const track = h("div", { class: "waterfall__ticks", "aria-hidden": "true" });
  for (const tick of ticks(totalUs)) {
    const label = h("span", { class: "waterfall__tick" }, tick.label);
    label.style.setProperty("--at", `${tick.at}%`);
    track.append(label);
  }
  return h("div", { class: "waterfall__axis" }, h("span", { class: "waterfall__axis-label" }, "Operation · service"), track);
}

export function waterfall(view: TraceView, target: string | undefined): Waterfall {
  const colours = serviceColours(view.services);
  const drawn = new Set(view.spans.map((s) => s.span_id));
  const rows = new Map<string, { row: HTMLLIElement; head: HTMLButtonElement; details: HTMLElement; span: TraceSpanView }>();
  const list = h("ol", { class: "waterfall__rows", "aria-label": "Spans, in call order" });

  const toggle = (spanId: string, open: boolean): void => {
    const r = rows.get(spanId);
    if (r === undefined) return;
    if (open && r.details.childElementCount === 0) r.details.append(spanDetails(r.span, `span-${r.span.span_id}-details`, r.span.parent_span_id === null || drawn.has(r.span.parent_span_id)));
    r.details.hidden = !open;
    r.head.setAttribute("aria-expanded", String(open));
    r.row.classList.toggle("span-row--open", open);
  };

  for (const span of view.spans) {
    const isTarget = span.span_id === target;
    const place = barPlacement(span.start_us, span.duration_us, view.duration_us);
    // The operation first: a narrow column cuts the end of the line, and the service has a colour too.
    const label = h(
      "span",
      { class: "span-row__label", title: `${span.operation} · ${span.service}` },
      h("span", { class: "span-row__op" }, span.operation),
      span.status === "error" && h("span", { class: "span-row__error" }, " error"),
      isTarget && h("span", { class: "tag tag--target" }, "this event"),
      " ",
      h("span", { class: `span-row__service span-service--c${colours.get(span.service) ?? 0}` }, span.service),
    );
    label.style.setProperty("--depth", String(span.depth));
    const bar = h("span", { class: `span-bar span-bar--c${colours.get(span.service) ?? 0}` });
    const duration = h("span", { class: "span-row__duration", "data-side": place.labelSide }, formatMicros(span.duration_us));
    const track = h("span", { class: "span-row__track" }, bar, duration);
    track.style.setProperty("--left", `${place.left}%`);
    track.style.setProperty("--width", `${place.width}%`);
    const detailsId = `span-${span.span_id}`;
    const head = h(
      "button",
      { type: "button", class: "span-row__head", "aria-expanded": "false", "aria-controls": detailsId, "aria-current": isTarget ? "true" : undefined },
      label,
      track,
      h("span", { class: "sr-only" }, `, starts at ${formatOffset(span.start_us)}, depth ${span.depth}`),
    );
    const details = h("div", { class: "span-row__details", id: detailsId, hidden: true });
    const row = h(
      "li",
      {
        class: `span-row${span.status === "error" ? " span-row--error" : ""}${isTarget ? " span-row--target" : ""}`,
        "data-span-id": span.span_id,
        "data-parent-span-id": span.parent_span_id,
        "data-depth": span.depth,
      },
      head,
      details,
    );
    head.addEventListener("click", () => toggle(span.span_id, details.hidden));
    rows.set(span.span_id, { row, head, details, span });
    list.append(row);
  }

  // Arrow keys, Home and End move between rows, as in a list of disclosures.
  list.addEventListener("keydown", (e) => {
    const heads = [...rows.values()].map((r) => r.head);
    const at = heads.indexOf(document.activeElement as HTMLButtonElement);
    if (at < 0) return;
    const next = e.key === "ArrowDown" ? at + 1 : e.key === "ArrowUp" ? at - 1 : e.key === "Home" ? 0 : e.key === "End" ? heads.length - 1 : undefined;
    if (next === undefined) return;
    e.preventDefault();
    heads[Math.max(0, Math.min(heads.length - 1, next))]?.focus();
  });

  return {
    element: h("div", { class: "waterfall" }, axis(view.duration_us), list),
    row: (spanId) => rows.get(spanId)?.row,
    toggle,
  };
}
