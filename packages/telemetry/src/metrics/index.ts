/** Metrics: the catalog, its typed instruments, and the provider startTelemetry starts. */
export { METRICS, promName, promLabel, type MetricDef, type MetricKey, type MetricKind, type MetricService, type LabelsOf } from "./catalog.js";
export { counter, upDownCounter, histogram, observeGauges, secondsSince, METER_NAME, type CounterOf, type HistogramOf, type Labels } from "./instruments.js";
export { startMetrics, type MetricsHandle, type MetricsOptions } from "./provider.js";
export { eventLoopSampler, type EventLoopWindow } from "./event-loop.js";
