/** Trace context survives every carrier: event fields, gRPC metadata and Kafka Buffer headers. */
import { Metadata } from "@grpc/grpc-js";
import { context, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  contextFromTraceContext,
  currentSpanIds,
  currentTraceContext,
  extractFromHeaders,
  extractFromMetadata,
  injectIntoHeaders,
  injectIntoMetadata,
} from "./carriers.js";
import { startTelemetry, type Telemetry } from "./start.js";
import { withSpan } from "./with-span.js";

const exporter = new InMemorySpanExporter();
let telemetry: Telemetry;

beforeAll(() => {
  telemetry = startTelemetry({ serviceName: "carriers-test", spanProcessor: new SimpleSpanProcessor(exporter) });
});
afterAll(() => telemetry.shutdown());
beforeEach(() => exporter.reset());

/** Runs `hop` inside a parent span, then a child span in the context `hop` returns. */
async function parentAndChild(hop: () => ReturnType<typeof context.active>): Promise<void> {
  await withSpan("parent", {}, async () => {
    const remote = hop();
    await withSpan("child", {}, () => Promise.resolve(), { parent: remote });
  });
  const [child, parent] = exporter.getFinishedSpans();
  expect(child?.name).toBe("child");
  expect(parent?.name).toBe("parent");
  expect(child?.spanContext().traceId).toBe(parent?.spanContext().traceId);
  expect(child?.parentSpanContext?.spanId).toBe(parent?.spanContext().spanId);
  expect(child?.parentSpanContext?.isRemote).toBe(true);
}

describe("currentTraceContext", () => {
  it("is empty outside a span", () => {
    expect(currentTraceContext()).toEqual({ traceparent: "", tracestate: "" });
    expect(currentSpanIds()).toBeUndefined();
  });

  it("describes the active span in W3C format", async () => {
    await withSpan("s", {}, (span) => {
      const tc = currentTraceContext();
      const { traceId, spanId } = span.spanContext();
      expect(tc.traceparent).toBe(`00-${traceId}-${spanId}-01`);
      expect(currentSpanIds()).toEqual({ traceId, spanId });
      return Promise.resolve();
    });
  });

  it("round-trips through an event's trace_context", async () => {
    await parentAndChild(() => contextFromTraceContext(currentTraceContext()));
  });

  it("ignores a missing or empty trace context", () => {
    const base = context.active();
    expect(contextFromTraceContext(undefined, base)).toBe(base);
    expect(contextFromTraceContext({ traceparent: "", tracestate: "" }, base)).toBe(base);
  });
});

describe("gRPC metadata", () => {
  it("round-trips", async () => {
    await parentAndChild(() => extractFromMetadata(injectIntoMetadata(new Metadata())));
  });

  it("yields no span from empty metadata", () => {
    expect(trace.getSpanContext(extractFromMetadata(new Metadata()))).toBeUndefined();
  });
});

describe("Kafka headers", () => {
  it("round-trips through Buffer values", async () => {
    await parentAndChild(() => {
      const headers = injectIntoHeaders({ "content-type": "application/x-protobuf" });
      expect(headers["traceparent"]).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      const asKafka = Object.fromEntries(
        Object.entries(headers).map(([k, v]) => [k, Buffer.from(v)] as const),
      );
      return extractFromHeaders(asKafka);
    });
  });

  it("reads a header whose name differs in case, and array values", () => {
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const ctx = extractFromHeaders({ TraceParent: [Buffer.from(traceparent)], tracestate: undefined });
    expect(trace.getSpanContext(ctx)?.traceId).toBe("0af7651916cd43dd8448eb211c80319c");
  });
});
