/** A process that sends its spans nowhere: they record nothing and carry trace context as recorded ones do. */
import { Metadata } from "@grpc/grpc-js";
import { suppressTracing } from "@opentelemetry/core";
import { context, trace } from "@opentelemetry/api";
import { afterAll, beforeAll, expect, it } from "vitest";
import { currentSpanIds, extractFromMetadata, injectIntoMetadata } from "./carriers.js";
import { startTelemetry, type Telemetry } from "./start.js";
import { untraced } from "./untraced.js";
import { withSpan } from "./with-span.js";

let telemetry: Telemetry;

beforeAll(() => {
  telemetry = startTelemetry({ serviceName: "id-only-test" });
});
afterAll(() => telemetry.shutdown());

const traceparentOf = (md: Metadata): string => String(md.get("traceparent")[0]);

it("gives a root span a new sampled trace and a child the parent's trace with an id of its own, recording neither", async () => {
  const seen = await withSpan("root", { a: 1 }, async (root) => {
    expect(root.isRecording()).toBe(false);
    const rootIds = currentSpanIds()!;
    const child = await withSpan("child", {}, (span) => Promise.resolve({ ids: currentSpanIds()!, sent: injectIntoMetadata(new Metadata()), recording: span.isRecording() }));
    return { rootIds, child };
  });
  expect(seen.rootIds.traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(seen.child.ids.traceId).toBe(seen.rootIds.traceId);
  expect(seen.child.ids.spanId).toMatch(/^[0-9a-f]{16}$/);
  expect(seen.child.ids.spanId).not.toBe(seen.rootIds.spanId);
  expect(seen.child.recording).toBe(false);
  expect(traceparentOf(seen.child.sent)).toBe(`00-${seen.rootIds.traceId}-${seen.child.ids.spanId}-01`);
});

it("continues a caller's trace with its flags: an unsampled one stays unsampled", async () => {
  const sent = await untraced(() => withSpan("poll", {}, () => Promise.resolve(injectIntoMetadata(new Metadata()))));
  expect(traceparentOf(sent)).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
  const onward = await withSpan("server", {}, () => Promise.resolve(injectIntoMetadata(new Metadata())), { parent: extractFromMetadata(sent) });
  const [, callerTrace, callerSpan] = traceparentOf(sent).split("-");
  const [, trace2, span2, flags] = traceparentOf(onward).split("-");
  expect(trace2).toBe(callerTrace);
  expect(span2).not.toBe(callerSpan);
  expect(flags).toBe("00");
});

it("makes a root span where asked, and no ids where tracing is suppressed", () => {
  const tracer = trace.getTracer("t");
  const parent = tracer.startSpan("parent");
  const root = tracer.startSpan("root", { root: true }, trace.setSpan(context.active(), parent));
  expect(root.spanContext().traceId).not.toBe(parent.spanContext().traceId);
  const suppressed = tracer.startSpan("x", {}, suppressTracing(context.active()));
  expect(trace.isSpanContextValid(suppressed.spanContext())).toBe(false);
  expect(tracer.startActiveSpan("active", (span) => trace.getActiveSpan() === span)).toBe(true);
});
