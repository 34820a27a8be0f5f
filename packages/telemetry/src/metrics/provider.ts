/**
 * The process's meter provider, started by startTelemetry beside the tracer provider: it exports
 * over OTLP/HTTP (protobuf) every `exportIntervalMs` when an endpoint is set, and serves the
 * Prometheus text format at `/metrics` on its own small HTTP server when a port is given (port 0
 * binds any free port; `scrapeUrl()` says which). Neither set: no provider is registered and every
 * instrument stays a no-op. While it runs it observes the process's event loop (event-loop.ts).
 */
import { createServer, type Server } from "node:http";
import { metrics } from "@opentelemetry/api";
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import type { Resource } from "@opentelemetry/resources";
import { MeterProvider, PeriodicExportingMetricReader, type IMetricReader } from "@opentelemetry/sdk-metrics";
import { observeEventLoop } from "./event-loop.js";
import { meterProviderChanged } from "./instruments.js";

export interface MetricsOptions {
  /** OTLP/HTTP metrics URL, e.g. Prometheus's `http://127.0.0.1:9090/api/v1/otlp/v1/metrics`. */
  readonly otlpEndpoint?: string | undefined;
  /** How often metrics are pushed over OTLP. @default 15000 */
  readonly exportIntervalMs?: number | undefined;
  /** Serve `/metrics` for a Prometheus scrape on this port (0: any free one). */
  readonly prometheusPort?: number | undefined;
  /** The scrape endpoint's address. @default "127.0.0.1" */
  readonly prometheusHost?: string | undefined;
  /** An extra reader, e.g. an in-memory one in tests. */
  readonly reader?: IMetricReader | undefined;
}

export interface MetricsHandle {
  /** `http://host:port/metrics` once the scrape endpoint listens; undefined without one. */
  scrapeUrl(): Promise<string | undefined>;
  /** Exports what is pending, stops the endpoint and unregisters the provider. */
  shutdown(): Promise<void>;
}

const DEFAULT_EXPORT_INTERVAL_MS = 15_000;
/** An export (with the exporter's retries) may take this long, so shutdown stays bounded. */
const EXPORT_TIMEOUT_MS = 5_000;

export function startMetrics(resource: Resource, opts: MetricsOptions): MetricsHandle | undefined {
  const readers: IMetricReader[] = [];
  if (opts.otlpEndpoint !== undefined && opts.otlpEndpoint !== "") {
    const interval = opts.exportIntervalMs ?? DEFAULT_EXPORT_INTERVAL_MS;
    readers.push(
      new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter({ url: opts.otlpEndpoint, timeoutMillis: EXPORT_TIMEOUT_MS }),
        exportIntervalMillis: interval,
        exportTimeoutMillis: Math.min(EXPORT_TIMEOUT_MS, interval),
      }),
    );
  }
  let prometheus: PrometheusExporter | undefined;
  if (opts.prometheusPort !== undefined) {
    // Its own server is not used: it cannot say which port 0 bound.
    prometheus = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
    readers.push(prometheus);
  }
  if (opts.reader !== undefined) readers.push(opts.reader);
  if (readers.length === 0) return undefined;

  const provider = new MeterProvider({ resource, readers });
  metrics.setGlobalMeterProvider(provider);
  meterProviderChanged();
  const eventLoop = observeEventLoop();

  let server: Server | undefined;
  const listening: Promise<string | undefined> =
    prometheus === undefined
      ? Promise.resolve(undefined)
      : new Promise((resolve, reject) => {
          const exporter = prometheus;
          const host = opts.prometheusHost ?? "127.0.0.1";
          server = createServer((req, res) => {
            if (req.method === "GET" && (req.url ?? "").split("?")[0] === "/metrics") {
              exporter.getMetricsRequestHandler(req, res);
              return;
            }
            res.statusCode = 404;
            res.end("only GET /metrics is served here\n");
          });
          server.once("error", reject);
          server.listen(opts.prometheusPort, host, () => {
            const address = server?.address();
            const port = typeof address === "object" && address !== null ? address.port : opts.prometheusPort;
            resolve(`http://${host.includes(":") ? `[${host}]` : host}:${port}/metrics`);
          });
        });
  // A port already taken is reported by scrapeUrl() and shutdown(), not as an unhandled rejection.
  listening.catch(() => undefined);

  let stopping: Promise<void> | undefined;
  return {
    scrapeUrl: () => listening,
    shutdown() {
      stopping ??= (async () => {
        eventLoop.stop();
        try {
          await provider.shutdown();
        } finally {
          if (server !== undefined) await new Promise<void>((resolve) => server!.close(() => resolve()));
          metrics.disable();
          meterProviderChanged();
        }
      })();
      return stopping;
    },
  };
}
