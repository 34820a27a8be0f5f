/**
 * The tracer of a process that sends its spans nowhere (no OTLP endpoint, no span processor):
 * every span gets its ids as a recorded one would (a new trace at a root, the parent's trace,
 * flags and state below it; none under suppressed tracing), so trace context still goes into
 * events, gRPC metadata, logs and the model request's `traceparent`, and the services it reaches
 * decide on their own spans as before. It records nothing: the SDK's tracer made a span with its
 * attributes, clock readings and metrics for every call and step, and dropped it at its end.
 */
import {
  TraceFlags,
  context,
  trace,
  type Context,
  type Span,
  type SpanOptions,
  type Tracer,
  type TracerProvider,
} from "@opentelemetry/api";
import { isTracingSuppressed } from "@opentelemetry/core";
import { RandomIdGenerator } from "@opentelemetry/sdk-trace-base";

const ids = new RandomIdGenerator();

class IdOnlyTracer implements Tracer {
  startSpan(_name: string, options: SpanOptions = {}, ctx: Context = context.active()): Span {
    if (isTracingSuppressed(ctx)) return trace.wrapSpanContext({ traceId: "", spanId: "", traceFlags: TraceFlags.NONE });
    const parent = options.root === true ? undefined : trace.getSpan(ctx)?.spanContext();
    if (parent === undefined || !trace.isSpanContextValid(parent)) {
      return trace.wrapSpanContext({ traceId: ids.generateTraceId(), spanId: ids.generateSpanId(), traceFlags: TraceFlags.SAMPLED });
    }
    return trace.wrapSpanContext({
      traceId: parent.traceId,
      spanId: ids.generateSpanId(),
      traceFlags: parent.traceFlags,
      ...(parent.traceState === undefined ? {} : { traceState: parent.traceState }),
    });
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, ctx: Context, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, a: SpanOptions | F, b?: Context | F, c?: F): ReturnType<F> {
    const fn = (c ?? (typeof b === "function" ? b : a)) as F;
    const options = typeof a === "function" ? {} : a;
    const parent = typeof b === "object" ? b : context.active();
    const span = this.startSpan(name, options, parent);
    return context.with(trace.setSpan(parent, span), fn as (span: Span) => ReturnType<F>, undefined, span);
  }
}

/** One tracer for every name and version: none of them records. */
export class IdOnlyTracerProvider implements TracerProvider {
  private readonly tracer = new IdOnlyTracer();

  getTracer(): Tracer {
    return this.tracer;
  }
}
