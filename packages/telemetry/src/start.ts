/**
 * The one place a process starts OpenTelemetry: a Node tracer provider named after the service,
 * registered globally with the W3C TraceContext propagator and the AsyncLocalStorage context
 * manager, exporting over OTLP/proto HTTP in batches; and, when asked, the meter provider beside it
 * (metrics/provider.ts: OTLP and a Prometheus scrape endpoint). Everything else only asks for a
 * tracer or records through the catalog's instruments. A process given neither an endpoint nor a
 * processor records no spans, and still gives each one its ids (id-only-tracer.ts).
 */
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { context, propagation, trace, type Tracer } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import {
  BatchSpanProcessor,
  NodeTracerProvider,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-node";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import { IdOnlyTracerProvider } from "./id-only-tracer.js";
import { startMetrics, type MetricsOptions } from "./metrics/provider.js";

export interface TelemetryOptions {
  readonly serviceName: string;
  /** OTLP/HTTP base URL, e.g. `http://127.0.0.1:4318`; `/v1/traces` is appended. No exporter when unset. */
  readonly otlpEndpoint?: string | undefined;
  /** An extra processor, e.g. a SimpleSpanProcessor over an InMemorySpanExporter in tests. */
  readonly spanProcessor?: SpanProcessor | undefined;
  /** Metrics' exporters; none set: no meter provider, and instruments are no-ops. */
  readonly metrics?: MetricsOptions | undefined;
}

export interface Telemetry {
  readonly serviceName: string;
  readonly tracer: Tracer;
  /** The Prometheus scrape endpoint's URL once it listens (undefined without one); rejects when its port was taken. */
  metricsUrl(): Promise<string | undefined>;
  /**
   * Flushes pending spans and unregisters the globals. Idempotent: every call gets the same
   * promise. Rejects when the final export fails (e.g. the collector is down), after at most a
   * few seconds of retries, so a shutdown sequence can report it.
   */
  shutdown(): Promise<void>;
}

/** Bounds of the export queue: spans beyond it are dropped (and counted by the SDK), never buffered forever. */
const BATCH = {
  maxQueueSize: 4096,
  maxExportBatchSize: 512,
  scheduledDelayMillis: 1000,
  exportTimeoutMillis: 5_000,
} as const;

/** How long one export (with the exporter's own retries) may take, so shutdown stays bounded. */
const EXPORT_TIMEOUT_MS = 5_000;

const DEFAULT_TRACER_NAME = "metaharness";

let current: Telemetry | undefined;
/** Whether the running telemetry records spans (it has an exporter or a processor). */
let recording = false;

/**
 * Starts telemetry for this process. A second call returns the running instance and ignores its
 * options; after `shutdown()` a new call starts afresh (which tests rely on).
 */
export function startTelemetry(opts: TelemetryOptions): Telemetry {
  if (current !== undefined) return current;

  const spanProcessors: SpanProcessor[] = [];
  if (opts.otlpEndpoint !== undefined && opts.otlpEndpoint !== "") {
    const exporter = new OTLPTraceExporter({
      url: tracesUrl(opts.otlpEndpoint),
      timeoutMillis: EXPORT_TIMEOUT_MS,
    });
    spanProcessors.push(new BatchSpanProcessor(exporter, BATCH));
  }
  if (opts.spanProcessor !== undefined) spanProcessors.push(opts.spanProcessor);

  const resource = defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: opts.serviceName }));
  const propagator = new W3CTraceContextPropagator();
  // Spans nobody receives are not recorded: their ids alone are made and carried on.
  const provider = spanProcessors.length === 0 ? undefined : new NodeTracerProvider({ resource, spanProcessors });
  if (provider !== undefined) {
    // The default context manager of NodeTracerProvider.register() is AsyncLocalStorage-based.
    provider.register({ propagator });
  } else {
    // What register() sets, with the id-only provider in place of the SDK's.
    trace.setGlobalTracerProvider(new IdOnlyTracerProvider());
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(propagator);
  }

  const meters = opts.metrics === undefined ? undefined : startMetrics(resource, opts.metrics);

  let stopping: Promise<void> | undefined;
  const telemetry: Telemetry = {
    serviceName: opts.serviceName,
    tracer: provider?.getTracer(opts.serviceName) ?? trace.getTracer(opts.serviceName),
    metricsUrl: () => meters?.scrapeUrl() ?? Promise.resolve(undefined),
    shutdown() {
      stopping ??= (async () => {
        try {
          // Both flush what they hold before resolving; a failed export of one does not skip the other.
          const [spans, points] = await Promise.allSettled([provider?.shutdown(), meters?.shutdown()]);
          if (spans.status === "rejected") throw spans.reason;
          if (points.status === "rejected") throw points.reason;
        } finally {
          trace.disable();
          context.disable();
          propagation.disable();
          if (current === telemetry) {
            current = undefined;
            recording = false;
          }
        }
      })();
      return stopping;
    },
  };
  current = telemetry;
  recording = provider !== undefined;
  return telemetry;
}

/**
 * Whether spans started now are recorded: false before `startTelemetry`, after its shutdown, and
 * in a process that sends its spans nowhere. A client that makes a span only to record it (the
 * model SDK's span of a request) can skip it then and carry the active context itself.
 */
export function recordsSpans(): boolean {
  return recording;
}

/** A tracer from the global provider (a no-op tracer until `startTelemetry` ran). */
export function getTracer(name?: string): Tracer {
  return trace.getTracer(name ?? current?.serviceName ?? DEFAULT_TRACER_NAME);
}

function tracesUrl(endpoint: string): string {
  const base = endpoint.replace(/\/+$/, "");
  return base.endsWith("/v1/traces") ? base : `${base}/v1/traces`;
}
