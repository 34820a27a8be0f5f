/**
 * Runs async work inside an active span that always ends, and records a failure the same way
 * everywhere: the exception as a span event plus an ERROR status.
 */
import {
  SpanKind,
  SpanStatusCode,
  context,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from "@opentelemetry/api";
import { getTracer } from "./start.js";

export interface WithSpanOptions {
  /** The parent context (e.g. from `extractFromMetadata`); the active context by default. */
  readonly parent?: Context | undefined;
  readonly kind?: SpanKind | undefined;
  /** The tracer to use; `getTracer()` by default. */
  readonly tracer?: Tracer | undefined;
}

/** Runs `fn` in a new active span; a thrown error is recorded on the span and rethrown. */
export function withSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
  opts: WithSpanOptions = {},
): Promise<T> {
  const tracer = opts.tracer ?? getTracer();
  return tracer.startActiveSpan(
    name,
    { attributes, kind: opts.kind ?? SpanKind.INTERNAL },
    opts.parent ?? context.active(),
    async (span) => {
      try {
        return await fn(span);
      } catch (err) {
        recordError(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

/** Records `err` on `span` as an exception event and sets the span's status to ERROR. */
export function recordError(span: Span, err: unknown): void {
  if (err instanceof Error) {
    span.recordException(err);
    span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
  } else {
    span.recordException(String(err));
    span.setStatus({ code: SpanStatusCode.ERROR, message: String(err) });
  }
}
