/**
 * @metaharness/telemetry: OpenTelemetry started in one place, and W3C trace context carried through
 * gRPC metadata, events and Kafka headers. The OpenTelemetry API types services need are
 * re-exported so that only this package depends on OpenTelemetry directly.
 */
export { startTelemetry, getTracer, recordsSpans, type Telemetry, type TelemetryOptions } from "./start.js";
export {
  currentTraceContext,
  currentSpanIds,
  contextFromTraceContext,
  injectIntoHeaders,
  extractFromHeaders,
  injectIntoMetadata,
  extractFromMetadata,
  type TraceContext,
  type HeaderValue,
} from "./carriers.js";
export { withSpan, recordError, type WithSpanOptions } from "./with-span.js";
export * from "./metrics/index.js";
export { untraced } from "./untraced.js";
export {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from "@opentelemetry/api";
export type { ReadableSpan, SpanProcessor } from "@opentelemetry/sdk-trace-node";
