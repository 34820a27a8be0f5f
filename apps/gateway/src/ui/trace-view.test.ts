/**
 * The trace page's view of a Jaeger trace: tree order and depth, offsets from the trace's start,
 * status and attributes as emitted, spans whose parent is missing, malformed references; and the
 * sessions a trace names.
 */
import { describe, expect, it } from "vitest";
import type { JaegerKeyValue, JaegerSpan, JaegerTrace } from "./jaeger.js";
import { MAX_VIEW_SPANS, sessionIdsOf, toTraceView, treeOrder } from "./trace-view.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const T0 = 1_795_944_718_684_000;

const kv = (key: string, value: string | number | boolean): JaegerKeyValue => ({
  key,
  type: typeof value === "string" ? "string" : typeof value === "boolean" ? "bool" : Number.isInteger(value) ? "int64" : "float64",
  value,
});

function span(id: string, operation: string, start: number, duration: number, opts: { parent?: string; process?: string; tags?: JaegerKeyValue[]; logs?: JaegerSpan["logs"] } = {}): JaegerSpan {
  return {
    traceID: TRACE,
    spanID: id,
    operationName: operation,
    references: opts.parent === undefined ? [] : [{ refType: "CHILD_OF", traceID: TRACE, spanID: opts.parent }],
    startTime: T0 + start,
    duration,
    tags: opts.tags ?? [],
    logs: opts.logs ?? [],
    processID: opts.process ?? "p1",
    warnings: null,
  };
}

function trace(spans: JaegerSpan[]): JaegerTrace {
  return { traceID: TRACE, spans, processes: { p1: { serviceName: "harness" }, p2: { serviceName: "session-log" } }, warnings: null };
}

// A harness step with two appends (one with a child) and a failed broker call, listed out of
// order, as Jaeger may list them.
const step = span("a000000000000001", "harness.call-model", 0, 50_000, {
  tags: [kv("mh.session_id", "sesn_1"), kv("gen_ai.usage.output_tokens", 42), kv("mh.model.ttft_ms", 12.5), kv("span.kind", "internal"), kv("otel.scope.name", "harness")],
});
const append2 = span("a000000000000003", "metaharness.v1.SessionLog/EmitEvents", 40_000, 2_000, { parent: step.spanID, process: "p2", tags: [kv("span.kind", "server"), kv("mh.session_id", "sesn_1")] });
const append1 = span("a000000000000002", "metaharness.v1.SessionLog/EmitEvents", 1_000, 3_000, { parent: step.spanID, process: "p2", tags: [kv("span.kind", "server"), kv("rpc.grpc.status_code", 0)] });
const inner = span("a000000000000004", "db.append", 1_500, 1_000, { parent: append1.spanID, process: "p2" });
const failed = span("a000000000000005", "metaharness.v1.SandboxBroker/Execute", 10_000, 5_000, {
  parent: step.spanID,
  tags: [kv("error", true), kv("otel.status_code", "ERROR"), kv("otel.status_description", "boom"), kv("span.kind", "server")],
  logs: [{ timestamp: T0 + 14_000, fields: [kv("event", "exception"), kv("exception.message", "boom"), kv("exception.type", "Error")] }],
});

describe("treeOrder", () => {
  it("puts each span after its parent, siblings by start time, with its depth", () => {
    const order = treeOrder([append2, inner, failed, step, append1]).map(({ span: s, depth }) => [s.spanID, depth]);
    expect(order).toEqual([
      [step.spanID, 0],
      [append1.spanID, 1],
      [inner.spanID, 2],
      [failed.spanID, 1],
      [append2.spanID, 1],
    ]);
  });

  it("shows a span whose parent is not in the trace as a root, in start order", () => {
    const orphan = span("b000000000000001", "late", 5_000, 10, { parent: "ffffffffffffffff" });
    expect(treeOrder([orphan, step]).map(({ span: s, depth }) => [s.operationName, depth])).toEqual([
      ["harness.call-model", 0],
      ["late", 0],
    ]);
  });

  it("loses no span to references that form a cycle or point at the span itself", () => {
    const x = span("c000000000000001", "x", 0, 10, { parent: "c000000000000002" });
    const y = span("c000000000000002", "y", 5, 10, { parent: "c000000000000001" });
    const self = span("c000000000000003", "self", 7, 10, { parent: "c000000000000003" });
    const order = treeOrder([y, self, x]);
    expect(order.map(({ span: s }) => s.operationName).sort()).toEqual(["self", "x", "y"]);
    expect(order.find(({ span: s }) => s.operationName === "self")?.depth).toBe(0);
  });
});

describe("toTraceView", () => {
  const view = toTraceView(trace([append2, inner, failed, step, append1]));

  it("gives the trace's start, length, services and sessions", () => {
    expect(view).toMatchObject({
      trace_id: TRACE,
      started_at: new Date(T0 / 1000).toISOString(),
      duration_us: 50_000,
      services: ["harness", "session-log"],
      session_ids: ["sesn_1"],
      span_count: 5,
      warnings: [],
    });
  });

  it("places each span by its offset from the trace's start, with its parent and depth", () => {
    expect(view.spans.map((s) => [s.operation, s.depth, s.start_us, s.duration_us, s.parent_span_id, s.service])).toEqual([
      ["harness.call-model", 0, 0, 50_000, null, "harness"],
      ["metaharness.v1.SessionLog/EmitEvents", 1, 1_000, 3_000, step.spanID, "session-log"],
      ["db.append", 2, 1_500, 1_000, append1.spanID, "session-log"],
      ["metaharness.v1.SandboxBroker/Execute", 1, 10_000, 5_000, step.spanID, "harness"],
      ["metaharness.v1.SessionLog/EmitEvents", 1, 40_000, 2_000, step.spanID, "session-log"],
    ]);
  });

  it("keeps the attributes as emitted, and turns Jaeger's bookkeeping tags into fields", () => {
    const first = view.spans[0]!;
    expect(first.attributes).toEqual({ "mh.session_id": "sesn_1", "gen_ai.usage.output_tokens": 42, "mh.model.ttft_ms": 12.5 });
    expect(first).toMatchObject({ kind: "internal", status: "unset", status_message: null, events: [] });
  });

  it("marks an error span with its message and its exception event", () => {
    const broker = view.spans.find((s) => s.span_id === failed.spanID)!;
    expect(broker).toMatchObject({ status: "error", status_message: "boom", kind: "server", attributes: {} });
    expect(broker.events).toEqual([{ name: "exception", at_us: 14_000, attributes: { "exception.message": "boom", "exception.type": "Error" } }]);
  });

  it("reads an OK status and a span without a kind", () => {
    const ok = toTraceView(trace([span("d000000000000001", "ok", 0, 1, { tags: [kv("otel.status_code", "OK")] })])).spans[0]!;
    expect(ok).toMatchObject({ status: "ok", kind: null });
  });

  it("shows at most MAX_VIEW_SPANS spans of a huge trace, and says so", () => {
    const root = span("e".repeat(16), "root", 0, 1_000_000);
    const many = Array.from({ length: MAX_VIEW_SPANS + 5 }, (_, i) => span(i.toString(16).padStart(16, "0"), `child ${i}`, i, 1, { parent: root.spanID }));
    const big = toTraceView(trace([root, ...many]));
    expect(big.span_count).toBe(MAX_VIEW_SPANS + 6);
    expect(big.spans).toHaveLength(MAX_VIEW_SPANS);
    expect(big.spans[0]?.operation).toBe("root");
    expect(big.warnings).toEqual([`The trace has ${MAX_VIEW_SPANS + 6} spans; the first ${MAX_VIEW_SPANS} are shown.`]);
  });
});

describe("sessionIdsOf", () => {
  it("collects every distinct session named by any span, including those not shown", () => {
    const other = span("f000000000000001", "harness.run-tools", 0, 1, { tags: [kv("mh.session_id", "sesn_2")] });
    expect(sessionIdsOf(trace([step, append1, append2, other]))).toEqual(["sesn_1", "sesn_2"]);
  });

  it("counts a non-string value as a session (one no tenant owns), and finds none in a trace without", () => {
    expect(sessionIdsOf(trace([span("f000000000000002", "x", 0, 1, { tags: [kv("mh.session_id", 7)] })]))).toEqual(["7"]);
    expect(sessionIdsOf(trace([append1, inner]))).toEqual([]);
  });
});
