/**
 * The metrics settings every service reads (spread `METRICS_ENV` into its config spec, beside
 * MH_OTLP_ENDPOINT for traces), and how runService turns them into the telemetry's options:
 * - MH_METRICS_PORT: serve the Prometheus text format at `/metrics` on this port (0: any free
 *   port), on MH_METRICS_HOST (default 127.0.0.1; 0.0.0.0 in a container Prometheus scrapes).
 * - MH_OTLP_METRICS_ENDPOINT: push metrics over OTLP/HTTP (protobuf) to this URL every
 *   MH_METRICS_EXPORT_INTERVAL_MS (default 15 s), e.g. Prometheus's own OTLP receiver
 *   `http://prometheus:9090/api/v1/otlp/v1/metrics` or a collector's `/v1/metrics`. Apart from
 *   MH_OTLP_ENDPOINT because a trace store (Jaeger) takes no metrics.
 * Neither set: no meter provider runs and recording costs nothing.
 */
import type { MetricsOptions } from "@metaharness/telemetry";
import { env } from "./env.js";

export const METRICS_ENV = {
  metricsPort: env.optional(env.port("MH_METRICS_PORT")),
  metricsHost: env.string("MH_METRICS_HOST", { default: "127.0.0.1" }),
  otlpMetricsEndpoint: env.optionalUrl("MH_OTLP_METRICS_ENDPOINT", { protocols: ["http", "https"] }),
  metricsExportIntervalMs: env.durationMs("MH_METRICS_EXPORT_INTERVAL_MS", { default: 15_000, min: 100, max: 3_600_000 }),
} as const;

/** What METRICS_ENV reads. */
export interface MetricsSettings {
  readonly metricsPort?: number | undefined;
  readonly metricsHost?: string | undefined;
  readonly otlpMetricsEndpoint?: string | undefined;
  readonly metricsExportIntervalMs?: number | undefined;
}

/** The telemetry's metrics options for these settings; undefined when no exporter is asked for. */
export function metricsOptions(s: MetricsSettings): MetricsOptions | undefined {
  if (s.metricsPort === undefined && s.otlpMetricsEndpoint === undefined) return undefined;
  return {
    prometheusPort: s.metricsPort,
    prometheusHost: s.metricsHost,
    otlpEndpoint: s.otlpMetricsEndpoint,
    exportIntervalMs: s.metricsExportIntervalMs,
  };
}
