/** untraced: nothing inside it is recorded, and what it sends says "not sampled". */
import { Metadata } from "@grpc/grpc-js";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { extractFromMetadata, injectIntoMetadata } from "./carriers.js";
import { startTelemetry, type Telemetry } from "./start.js";
import { untraced } from "./untraced.js";
import { withSpan } from "./with-span.js";

const exporter = new InMemorySpanExporter();
let telemetry: Telemetry;

beforeAll(() => {
  telemetry = startTelemetry({ serviceName: "untraced-test", spanProcessor: new SimpleSpanProcessor(exporter) });
});
afterAll(() => telemetry.shutdown());
beforeEach(() => exporter.reset());

it("records no span inside it, and sends traceparent with the sampled flag off", async () => {
  const sent = await untraced(() => withSpan("poll", {}, () => Promise.resolve(injectIntoMetadata(new Metadata()))));
  expect(exporter.getFinishedSpans()).toEqual([]);
  const traceparent = String(sent.get("traceparent")[0]);
  expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
  // A server that continues it (as service-kit's handlers do) records nothing either.
  await withSpan("server", {}, () => Promise.resolve(), { parent: extractFromMetadata(sent) });
  expect(exporter.getFinishedSpans()).toEqual([]);
  // Outside it, spans are recorded as before.
  await withSpan("traced", {}, () => Promise.resolve());
  expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(["traced"]);
});
