/**
 * What a waterfall row opens to: one span's facts (ids, parent, kind, timing, status), its
 * attributes as the service emitted them, and its events (an exception with its stack, for
 * instance). Long values (stack traces) show as their start and end, as in the timeline.
 */
import type { AttributeValue, TraceEventView, TraceSpanView } from "./wire.js";
import { h } from "./dom.js";
import { formatMicros, formatOffset } from "./trace-layout.js";
import { longText } from "./text-views.js";

function valueView(value: AttributeValue): HTMLElement {
  const text = String(value);
  return text.includes("\n") || text.length > 120 ? longText(text, "code") : h("code", { class: `attr-value attr-value--${typeof value}` }, text);
}

function attributeTable(attributes: Readonly<Record<string, AttributeValue>>, caption: string): HTMLElement {
  const entries = Object.entries(attributes).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return h("p", { class: "muted small" }, "No attributes.");
  return h(
    "table",
    { class: "attrs" },
    h("caption", { class: "sr-only" }, caption),
    h("tbody", {}, ...entries.map(([key, value]) => h("tr", {}, h("th", { scope: "row" }, h("code", {}, key)), h("td", {}, valueView(value))))),
  );
}

function eventView(event: TraceEventView): HTMLElement {
  return h(
    "li",
    { class: "span-event" },
    h("div", { class: "span-event__head" }, h("strong", {}, event.name), " ", h("span", { class: "muted" }, formatOffset(event.at_us))),
    attributeTable(event.attributes, `Attributes of event ${event.name}`),
  );
}

function fact(label: string, value: Node | string): HTMLElement {
  return h("div", { class: "fact" }, h("dt", {}, label), h("dd", {}, value));
}

/** The details of `span`; `parentKnown` says whether its parent is drawn in this trace. */
export function spanDetails(span: TraceSpanView, id: string, parentKnown: boolean): HTMLElement {
  const titleId = `${id}-title`;
  const parent = span.parent_span_id === null ? "none (a root)" : h("span", {}, h("code", {}, span.parent_span_id), parentKnown ? "" : " (not in this trace)");
  return h(
    "section",
    { class: "span-details", id, "aria-labelledby": titleId },
    h("h3", { id: titleId, class: "span-details__title" }, span.operation, " ", h("span", { class: "muted" }, `· ${span.service}`)),
    h(
      "dl",
      { class: "facts facts--compact" },
      fact("Span", h("code", {}, span.span_id)),
      fact("Parent", parent),
      fact("Kind", span.kind ?? "—"),
      fact("Starts", formatOffset(span.start_us)),
      fact("Duration", formatMicros(span.duration_us)),
      fact("Status", span.status === "error" ? h("strong", { class: "text-error" }, `error${span.status_message === null ? "" : `: ${span.status_message}`}`) : span.status),
    ),
    h("h4", { class: "span-details__section" }, "Attributes"),
    attributeTable(span.attributes, `Attributes of ${span.operation}`),
    h("h4", { class: "span-details__section" }, `Events (${span.events.length})`),
    span.events.length === 0 ? h("p", { class: "muted small" }, "No events.") : h("ol", { class: "span-events" }, ...span.events.map(eventView)),
  );
}
