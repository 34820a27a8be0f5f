/** recordsSpans: true only while a started telemetry has somewhere to send its spans. */
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { expect, it } from "vitest";
import { recordsSpans, startTelemetry } from "./start.js";

it("is true with a processor, false without one, before the start and after the shutdown", async () => {
  expect(recordsSpans()).toBe(false);
  const recorded = startTelemetry({ serviceName: "records-test", spanProcessor: new SimpleSpanProcessor(new InMemorySpanExporter()) });
  expect(recordsSpans()).toBe(true);
  await recorded.shutdown();
  expect(recordsSpans()).toBe(false);
  const idOnly = startTelemetry({ serviceName: "records-test" });
  expect(recordsSpans()).toBe(false);
  await idOnly.shutdown();
  expect(recordsSpans()).toBe(false);
});
