/**
 * Work nobody should have to read as a trace: a sweeper's or a watcher's poll, every few hundred
 * milliseconds, each of which would otherwise start a trace of its own and bury, in Jaeger's
 * search, the traces a person looks for. `untraced` runs it in a trace that is not sampled: its
 * spans are not recorded here, and the calls it makes carry `traceparent` with the sampled flag
 * off, so the services they reach (sampling after their parent, the default) record none either.
 * What the poll finds and acts on (a wake, an append) is started outside it, and traced.
 */
import { randomBytes } from "node:crypto";
import { ROOT_CONTEXT, TraceFlags, context, trace } from "@opentelemetry/api";

export function untraced<T>(fn: () => T): T {
  const unsampled = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: randomBytes(16).toString("hex"),
    spanId: randomBytes(8).toString("hex"),
    traceFlags: TraceFlags.NONE,
  });
  return context.with(unsampled, fn);
}
