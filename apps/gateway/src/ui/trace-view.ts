/**
 * A trace as the trace page draws it: every span once, in tree order (a parent, then its
 * children by start time, depth first), with its depth, its start as an offset from the trace's
 * start, its service, status and attributes as the service emitted them. Jaeger's own bookkeeping
 * tags (span kind, status, scope) become fields or are left out. Also the sessions a trace names,
 * which decide who may see it (see traces.ts). Pure functions of Jaeger's JSON.
 */
import type { AttributeValue, TraceSpanView, TraceView } from "./browser/wire.js";
import type { JaegerKeyValue, JaegerSpan, JaegerTrace } from "./jaeger.js";

/** Spans drawn at most; a larger trace shows its first ones in tree order, and says so. */
export const MAX_VIEW_SPANS = 2000;
/** The attribute naming the session a span worked for (harness steps, session-scoped RPCs). */
export const SESSION_ATTRIBUTE = "mh.session_id";

/** Tags Jaeger derives from the span itself, shown as fields of the span (or not at all). */
const BOOKKEEPING = new Set(["span.kind", "otel.status_code", "otel.status_description", "error", "otel.scope.name", "otel.scope.version", "internal.span.format"]);

function value(kv: JaegerKeyValue): AttributeValue {
  const v = kv.value;
  return typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? v : JSON.stringify(v) ?? "";
}

function attributes(kvs: readonly JaegerKeyValue[] | null | undefined, skip: ReadonlySet<string>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of kvs ?? []) if (!skip.has(kv.key)) out[kv.key] = value(kv);
  return out;
}

function tag(span: JaegerSpan, key: string): unknown {
  return span.tags?.find((t) => t.key === key)?.value;
}

function parentOf(span: JaegerSpan): string | null {
  const refs = span.references ?? [];
  const ref = refs.find((r) => r.refType === "CHILD_OF" && r.traceID === span.traceID) ?? refs.find((r) => r.traceID === span.traceID);
  return ref?.spanID ?? null;
}

/** Every distinct session a span of the trace names. A non-string value counts as a session too (one that matches none). */
export function sessionIdsOf(trace: JaegerTrace): string[] {
  const ids = new Set<string>();
  for (const span of trace.spans) for (const t of span.tags ?? []) if (t.key === SESSION_ATTRIBUTE) ids.add(String(t.value));
  return [...ids].sort();
}

const byStart = (a: JaegerSpan, b: JaegerSpan): number => a.startTime - b.startTime || a.operationName.localeCompare(b.operationName) || a.spanID.localeCompare(b.spanID);

/** The spans in tree order with their depth: roots (and spans whose parent is missing) by start, each followed by its subtree. */
export function treeOrder(spans: readonly JaegerSpan[]): Array<{ readonly span: JaegerSpan; readonly depth: number }> {
  const ids = new Set(spans.map((s) => s.spanID));
  const children = new Map<string, JaegerSpan[]>();
  const roots: JaegerSpan[] = [];
  for (const span of spans) {
    const parent = parentOf(span);
    if (parent === null || parent === span.spanID || !ids.has(parent)) roots.push(span);
    else {
      const siblings = children.get(parent);
      if (siblings === undefined) children.set(parent, [span]);
      else siblings.push(span);
    }
  }
  const out: Array<{ span: JaegerSpan; depth: number }> = [];
  const seen = new Set<string>();
  const walk = (root: JaegerSpan): void => {
    // Iterative, so a deep (or malformed) trace cannot overflow the stack.
    const stack = [{ span: root, depth: 0 }];
    while (stack.length > 0) {
      const next = stack.pop()!;
      if (seen.has(next.span.spanID)) continue;
      seen.add(next.span.spanID);
      out.push(next);
      // Pushed latest first, so the earliest child is walked next.
      const kids = [...(children.get(next.span.spanID) ?? [])].sort(byStart).reverse();
      for (const kid of kids) stack.push({ span: kid, depth: next.depth + 1 });
    }
  };
  for (const root of [...roots].sort(byStart)) walk(root);
  // Spans only reachable through a cycle of references: shown as roots rather than lost.
  for (const span of [...spans].sort(byStart)) if (!seen.has(span.spanID)) walk(span);
  return out;
}

function spanView(trace: JaegerTrace, span: JaegerSpan, depth: number, t0: number): TraceSpanView {
  const code = tag(span, "otel.status_code");
  const error = code === "ERROR" || tag(span, "error") === true;
  const message = tag(span, "otel.status_description");
  const kind = tag(span, "span.kind");
  return {
    span_id: span.spanID,
    parent_span_id: parentOf(span),
    depth,
    service: trace.processes[span.processID]?.serviceName ?? span.processID,
    operation: span.operationName,
    kind: typeof kind === "string" ? kind : null,
    start_us: span.startTime - t0,
    duration_us: span.duration,
    status: error ? "error" : code === "OK" ? "ok" : "unset",
    status_message: typeof message === "string" && message !== "" ? message : null,
    attributes: attributes(span.tags, BOOKKEEPING),
    events: (span.logs ?? []).map((log) => {
      const name = log.fields?.find((f) => f.key === "event")?.value;
      return { name: typeof name === "string" ? name : "event", at_us: log.timestamp - t0, attributes: attributes(log.fields, new Set(["event"])) };
    }),
  };
}

export function toTraceView(trace: JaegerTrace): TraceView {
  // A loop, not Math.min(...spans): a spread of a very large trace would overflow the call stack.
  let t0 = Infinity;
  let end = -Infinity;
  for (const s of trace.spans) {
    t0 = Math.min(t0, s.startTime);
    end = Math.max(end, s.startTime + s.duration);
  }
  const ordered = treeOrder(trace.spans);
  const shown = ordered.slice(0, MAX_VIEW_SPANS);
  const warnings = [...(trace.warnings ?? [])];
  if (shown.length < ordered.length) warnings.push(`The trace has ${ordered.length} spans; the first ${shown.length} are shown.`);
  return {
    trace_id: trace.traceID,
    started_at: trace.spans.length === 0 ? new Date(0).toISOString() : new Date(Math.floor(t0 / 1000)).toISOString(),
    duration_us: trace.spans.length === 0 ? 0 : end - t0,
    services: [...new Set(shown.map(({ span }) => trace.processes[span.processID]?.serviceName ?? span.processID))].sort(),
    session_ids: sessionIdsOf(trace),
    span_count: ordered.length,
    spans: shown.map(({ span, depth }) => spanView(trace, span, depth, t0)),
    warnings,
  };
}
