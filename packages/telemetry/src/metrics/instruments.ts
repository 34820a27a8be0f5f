/**
 * Typed instruments over the catalog (catalog.ts): a service records `METRICS.x` through
 * `counter(METRICS.x)` and friends, which take only that metric's label keys (an extra key is a
 * compile error, and dropped at run time too), so a session id or a user's text cannot become a
 * label. Instruments are made lazily from the global meter provider and made again when it
 * changes (startMetrics, a test's restart), so a module can hold them as constants: before any
 * provider, and in processes that export no metrics, they are OpenTelemetry's no-ops.
 */
import { metrics, type Attributes, type Meter } from "@opentelemetry/api";
import type { MetricDef } from "./catalog.js";

/** The meter's name: one scope for every metric of Meta-Harness. */
export const METER_NAME = "metaharness";

let generation = 0;

/** Called when the global meter provider is set or removed: instruments are made again. */
export function meterProviderChanged(): void {
  generation++;
}

export type Labels<L extends string> = { readonly [K in L]?: string | number | boolean };

function only<L extends string>(d: MetricDef<L>, labels: Labels<L> | undefined): Attributes | undefined {
  if (labels === undefined) return undefined;
  const out: Attributes = {};
  for (const key of d.labels) {
    const value = labels[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

function lazy<I>(make: (meter: Meter) => I): () => I {
  let made: { gen: number; inst: I } | undefined;
  return () => {
    if (made === undefined || made.gen !== generation) made = { gen: generation, inst: make(metrics.getMeter(METER_NAME)) };
    return made.inst;
  };
}

function options(d: MetricDef): { description: string; unit: string; advice?: { explicitBucketBoundaries: number[] } } {
  return {
    description: d.description,
    unit: d.unit,
    ...(d.buckets === undefined ? {} : { advice: { explicitBucketBoundaries: [...d.buckets] } }),
  };
}

export interface CounterOf<L extends string> {
  add(value: number, labels?: Labels<L>): void;
}

export interface HistogramOf<L extends string> {
  record(value: number, labels?: Labels<L>): void;
}

export function counter<L extends string>(d: MetricDef<L>): CounterOf<L> {
  if (d.kind !== "counter") throw new Error(`${d.name} is a ${d.kind}, not a counter`);
  const get = lazy((m) => m.createCounter(d.name, options(d)));
  return { add: (value, labels) => get().add(value, only(d, labels)) };
}

export function upDownCounter<L extends string>(d: MetricDef<L>): CounterOf<L> {
  if (d.kind !== "updown") throw new Error(`${d.name} is a ${d.kind}, not an up-down counter`);
  const get = lazy((m) => m.createUpDownCounter(d.name, options(d)));
  return { add: (value, labels) => get().add(value, only(d, labels)) };
}

export function histogram<L extends string>(d: MetricDef<L>): HistogramOf<L> {
  if (d.kind !== "histogram") throw new Error(`${d.name} is a ${d.kind}, not a histogram`);
  const get = lazy((m) => m.createHistogram(d.name, options(d)));
  return { record: (value, labels) => get().record(value, only(d, labels)) };
}

/** Seconds since `startMs` (a `performance.now()` or `Date.now()` reading, the same clock as now). */
export function secondsSince(startMs: number, now: number = performance.now()): number {
  return Math.max(0, now - startMs) / 1000;
}

/**
 * Gauges read together at each collection (a scrape, an OTLP export) by one callback, e.g. one
 * SQL query for the outbox's lag and backlog. A callback that fails reports nothing for that
 * collection. Registered on the meter provider current now; `stop()` unregisters it.
 */
export function observeGauges<K extends string>(
  defs: { readonly [P in K]: MetricDef<never> },
  read: () => Promise<{ readonly [P in K]: number }>,
): { stop(): void } {
  const meter = metrics.getMeter(METER_NAME);
  const gauges = (Object.keys(defs) as K[]).map((k) => {
    const d = defs[k];
    if (d.kind !== "gauge") throw new Error(`${d.name} is a ${d.kind}, not a gauge`);
    return [k, meter.createObservableGauge(d.name, options(d))] as const;
  });
  const callback = async (result: { observe(gauge: (typeof gauges)[number][1], value: number): void }): Promise<void> => {
    const values = await read().catch(() => undefined);
    if (values === undefined) return;
    for (const [k, gauge] of gauges) result.observe(gauge, values[k]);
  };
  const observables = gauges.map(([, g]) => g);
  meter.addBatchObservableCallback(callback, observables);
  return { stop: () => meter.removeBatchObservableCallback(callback, observables) };
}
