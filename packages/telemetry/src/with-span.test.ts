/** withSpan ends its span in every outcome and records failures on it. */
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { getTracer, startTelemetry, type Telemetry } from "./start.js";
import { withSpan } from "./with-span.js";

const exporter = new InMemorySpanExporter();
let telemetry: Telemetry;

beforeAll(() => {
  telemetry = startTelemetry({ serviceName: "with-span-test", spanProcessor: new SimpleSpanProcessor(exporter) });
});
afterAll(() => telemetry.shutdown());
beforeEach(() => exporter.reset());

it("returns the result and ends the span with its attributes and kind", async () => {
  const result = await withSpan("ok", { "mh.session_id": "s1" }, () => Promise.resolve(42), {
    kind: SpanKind.SERVER,
  });
  expect(result).toBe(42);
  const [span] = exporter.getFinishedSpans();
  expect(span?.name).toBe("ok");
  expect(span?.kind).toBe(SpanKind.SERVER);
  expect(span?.attributes["mh.session_id"]).toBe("s1");
  expect(span?.status.code).toBe(SpanStatusCode.UNSET);
});

it("records a thrown error, sets ERROR status, ends the span and rethrows", async () => {
  const boom = new Error("boom");
  await expect(withSpan("fails", {}, () => Promise.reject(boom))).rejects.toBe(boom);
  const [span] = exporter.getFinishedSpans();
  expect(span?.status).toEqual({ code: SpanStatusCode.ERROR, message: "boom" });
  const event = span?.events.find((e) => e.name === "exception");
  expect(event?.attributes?.["exception.message"]).toBe("boom");
});

it("nests spans through the AsyncLocalStorage context across awaits", async () => {
  await withSpan("outer", {}, async () => {
    // A timer on purpose: crosses a real async boundary, which the context must survive.
    await new Promise((resolve) => setTimeout(resolve, 1));
    await withSpan("inner", {}, () => Promise.resolve());
  });
  const [inner, outer] = exporter.getFinishedSpans();
  expect(inner?.parentSpanContext?.spanId).toBe(outer?.spanContext().spanId);
});

it("startTelemetry returns the running instance; shutdown is idempotent", async () => {
  expect(startTelemetry({ serviceName: "other" })).toBe(telemetry);
  expect(getTracer()).toBeDefined();
  const first = telemetry.shutdown();
  expect(telemetry.shutdown()).toBe(first);
  await first;
  // The old exporter was shut down with its provider; a restart gets a fresh one.
  const fresh = new InMemorySpanExporter();
  const restarted = startTelemetry({ serviceName: "again", spanProcessor: new SimpleSpanProcessor(fresh) });
  expect(restarted).not.toBe(telemetry);
  await withSpan("after-restart", {}, () => Promise.resolve());
  expect(fresh.getFinishedSpans().map((s) => s.name)).toEqual(["after-restart"]);
  telemetry = restarted;
});
