/**
 * /ui/traces/:id: one trace as a waterfall, read through the gateway (GET /ui/api/traces/:id,
 * which asks Jaeger and shows the trace only to the tenant of its sessions). The span of
 * `?span=` (the event's, when the page was opened from the timeline) is highlighted, opened and
 * scrolled into view. Spans reach Jaeger a second or so after their work: Reload reads it again.
 */
import type { TraceView } from "./wire.js";
import { getJson, HttpError } from "./api.js";
import { append, h, replaceChildren } from "./dom.js";
import { formatDateTime } from "./format.js";
import type { PageContext } from "./page-context.js";
import { formatMicros } from "./trace-layout.js";
import { waterfall } from "./waterfall.js";
import { copyButton, notice } from "./widgets.js";

function fact(label: string, ...value: Array<Node | string>): HTMLElement {
  return h("div", { class: "fact" }, h("dt", {}, label), h("dd", {}, ...value));
}

const sessionLink = (id: string): HTMLElement => h("a", { href: `/ui/sessions/${encodeURIComponent(id)}` }, h("code", {}, id));

function crumbs(view: TraceView | undefined): HTMLElement {
  const sessions = view?.session_ids ?? [];
  return h(
    "p",
    { class: "crumbs" },
    h("a", { href: "/ui/" }, "← All sessions"),
    ...sessions.map((id) => h("span", {}, " · ", h("a", { href: `/ui/sessions/${encodeURIComponent(id)}`, class: "crumbs__session" }, `← Session ${id}`))),
  );
}

function header(view: TraceView): HTMLElement {
  const errors = view.spans.filter((s) => s.status === "error").length;
  return h(
    "header",
    { class: "session-head" },
    // The copy button beside the heading, not in it: the heading names the trace, nothing more.
    h("div", { class: "title-row" }, h("h1", { class: "session-title" }, "Trace ", h("code", { class: "trace-id" }, view.trace_id)), copyButton(view.trace_id, "trace id")),
    h(
      "dl",
      { class: "facts" },
      fact("Started", h("time", { datetime: view.started_at }, formatDateTime(view.started_at))),
      fact("Duration", formatMicros(view.duration_us)),
      fact("Spans", `${view.span_count}${errors > 0 ? ` · ${errors} with errors` : ""}`),
      fact("Services", view.services.join(", ")),
      fact("Sessions", ...view.session_ids.flatMap((id, i) => (i === 0 ? [sessionLink(id)] : [", ", sessionLink(id)]))),
    ),
  );
}

export async function tracePage(main: HTMLElement, traceId: string, ctx: PageContext): Promise<void> {
  const target = new URLSearchParams(location.search).get("span") ?? undefined;
  document.title = `Trace ${traceId.slice(0, 8)} · Meta-Harness`;
  replaceChildren(main, crumbs(undefined), h("p", { class: "muted", role: "status" }, "Loading the trace…"));

  let view: TraceView;
  try {
    view = await getJson<TraceView>(`/ui/api/traces/${encodeURIComponent(traceId)}`);
  } catch (err) {
    if (err instanceof HttpError && err.status === 401) return ctx.unauthorized(err);
    const reload = h("button", { type: "button", class: "button" }, "Try again");
    reload.addEventListener("click", () => void tracePage(main, traceId, ctx));
    replaceChildren(
      main,
      crumbs(undefined),
      h("h1", {}, "Trace ", h("code", { class: "trace-id" }, traceId)),
      notice(err instanceof HttpError ? err.message : `Could not load the trace: ${String(err)}`, "error"),
      h("div", { class: "toolbar" }, reload),
    );
    return;
  }

  const chart = waterfall(view, target);
  const reload = h("button", { type: "button", class: "button" }, "Reload");
  reload.addEventListener("click", () => void tracePage(main, traceId, ctx));
  const legend = h("p", { class: "muted small" }, "Each row is a span: its name indented under its caller, its bar on the trace's time line. Select a row for its attributes and events.");
  const messages = h("div");
  for (const warning of view.warnings) append(messages, notice(warning));
  if (target !== undefined && chart.row(target) === undefined) {
    append(messages, notice(`The span ${target} is not in this trace yet: its spans may still be on their way to Jaeger. Reload in a moment.`));
  }
  replaceChildren(
    main,
    crumbs(view),
    header(view),
    h("div", { class: "toolbar" }, reload, legend),
    messages,
    h("section", { class: "waterfall-wrap", "aria-labelledby": "spans-title" }, h("h2", { id: "spans-title", class: "sr-only" }, "Spans"), chart.element),
  );

  const row = target === undefined ? undefined : chart.row(target);
  if (row !== undefined && target !== undefined) {
    chart.toggle(target, true);
    // The row's head, not the whole row: its opened details may be taller than the window.
    row.firstElementChild?.scrollIntoView({ block: "center" });
  }
}
