/**
 * Telemetry for tests: started with an in-memory exporter and a synchronous processor, so a test
 * can assert on finished spans right after the code under test returns. Behind the package's
 * `/testing` export, never its index; lint keeps production code from importing it.
 */
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from "@opentelemetry/sdk-trace-node";
import { startTelemetry, type Telemetry, type TelemetryOptions } from "./start.js";

export interface TestTelemetry {
  readonly telemetry: Telemetry;
  /** Spans ended so far, in the order they ended. */
  finishedSpans(): ReadableSpan[];
  /** Forgets the spans recorded so far. */
  reset(): void;
}

/**
 * Starts telemetry recording spans in memory, and metrics as `metrics` says (none by default; a
 * Prometheus endpoint on port 0: `telemetry.metricsUrl()`). Like `startTelemetry`, it is once per
 * process until shut down: call it from `beforeAll` and shut it down in `afterAll`.
 */
export function startTestTelemetry(serviceName = "test", metrics?: TelemetryOptions["metrics"]): TestTelemetry {
  const exporter = new InMemorySpanExporter();
  const telemetry = startTelemetry({ serviceName, spanProcessor: new SimpleSpanProcessor(exporter), metrics });
  return {
    telemetry,
    finishedSpans: () => exporter.getFinishedSpans(),
    reset: () => exporter.reset(),
  };
}
