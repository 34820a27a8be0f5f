/**
 * W3C trace context in and out of every carrier we use: an event's `trace_context`, Kafka headers
 * (whose values arrive as Buffers) and gRPC metadata. A private TraceContext propagator is used
 * rather than the global one, so carriers work the same before `startTelemetry` or without it.
 */
import {
  context,
  isSpanContextValid,
  trace,
  type Context,
  type TextMapGetter,
  type TextMapSetter,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import type { Metadata } from "@grpc/grpc-js";

/** The wire shape of trace context stamped on an event: empty strings mean "no trace". */
export interface TraceContext {
  readonly traceparent: string;
  readonly tracestate: string;
}

/** Kafka header values as kafkajs types them. */
export type HeaderValue = string | Buffer | ReadonlyArray<string | Buffer> | undefined;

const propagator = new W3CTraceContextPropagator();

const recordSetter: TextMapSetter<Record<string, string>> = {
  set(carrier, key, value) {
    carrier[key] = value;
  },
};

/** The trace context of the active span (or of `ctx`), ready to stamp on an event. */
export function currentTraceContext(ctx: Context = context.active()): TraceContext {
  const carrier: Record<string, string> = {};
  propagator.inject(ctx, carrier, recordSetter);
  return { traceparent: carrier["traceparent"] ?? "", tracestate: carrier["tracestate"] ?? "" };
}

/** The trace and span id of the active span, or undefined outside any (valid) span. */
export function currentSpanIds(
  ctx: Context = context.active(),
): { readonly traceId: string; readonly spanId: string } | undefined {
  const sc = trace.getSpanContext(ctx);
  if (sc === undefined || !isSpanContextValid(sc)) return undefined;
  return { traceId: sc.traceId, spanId: sc.spanId };
}

const traceContextGetter: TextMapGetter<TraceContext> = {
  get(tc, key) {
    const value = key === "traceparent" ? tc.traceparent : key === "tracestate" ? tc.tracestate : "";
    return value === "" ? undefined : value;
  },
  keys: () => ["traceparent", "tracestate"],
};

/**
 * A context whose parent is the remote span described by `tc`, based on the active context. With
 * no (or an empty) trace context the base context is returned unchanged.
 */
export function contextFromTraceContext(
  tc: TraceContext | undefined,
  base: Context = context.active(),
): Context {
  if (tc === undefined || tc.traceparent === "") return base;
  return propagator.extract(base, tc, traceContextGetter);
}

/** Adds `traceparent`/`tracestate` to Kafka-style headers; returns the same object. */
export function injectIntoHeaders(
  headers: Record<string, string>,
  ctx: Context = context.active(),
): Record<string, string> {
  propagator.inject(ctx, headers, recordSetter);
  return headers;
}

const headersGetter: TextMapGetter<Readonly<Record<string, HeaderValue>>> = {
  get(carrier, key) {
    let value = carrier[key];
    if (value === undefined) {
      const match = Object.keys(carrier).find((k) => k.toLowerCase() === key);
      value = match === undefined ? undefined : carrier[match];
    }
    if (value === undefined) return undefined;
    if (typeof value === "string") return value;
    if (Buffer.isBuffer(value)) return value.toString("utf8");
    return value.map((v) => (typeof v === "string" ? v : v.toString("utf8")));
  },
  keys: (carrier) => Object.keys(carrier),
};

/** The context carried by Kafka headers (string or Buffer values), based on `base`. */
export function extractFromHeaders(
  headers: Readonly<Record<string, HeaderValue>>,
  base: Context = context.active(),
): Context {
  return propagator.extract(base, headers, headersGetter);
}

const metadataSetter: TextMapSetter<Metadata> = {
  set(md, key, value) {
    md.set(key, value);
  },
};

const metadataGetter: TextMapGetter<Metadata> = {
  get(md, key) {
    const values = md.get(key).map((v) => (typeof v === "string" ? v : v.toString("utf8")));
    if (values.length === 0) return undefined;
    return values.length === 1 ? values[0] : values;
  },
  keys: (md) => Object.keys(md.getMap()),
};

/** Adds `traceparent`/`tracestate` to outgoing gRPC metadata; returns the same object. */
export function injectIntoMetadata(md: Metadata, ctx: Context = context.active()): Metadata {
  propagator.inject(ctx, md, metadataSetter);
  return md;
}

/** The context carried by incoming gRPC metadata, based on `base`. */
export function extractFromMetadata(md: Metadata, base: Context = context.active()): Context {
  return propagator.extract(base, md, metadataGetter);
}
