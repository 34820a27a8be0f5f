/**
 * The process's event loop, observed while a meter provider runs: its delay (how late a callback
 * that was ready ran: the queue inside the process, and the wait for a core on a busy machine),
 * sampled by Node's own timer histogram every 10 ms (perf_hooks monitorEventLoopDelay, in C++,
 * no JavaScript per sample), and its utilization. Each collection (a scrape, an OTLP export)
 * reports the time since the previous one and starts a new window, as OpenTelemetry's Node.js
 * runtime instrumentation does, so two scrapes bracket a window of the caller's choosing (a stall
 * across a collection is in neither window: Node's histogram forgets its last tick when reset).
 */
import { monitorEventLoopDelay, performance, type EventLoopUtilization } from "node:perf_hooks";
import { METRICS } from "./catalog.js";
import { observeGauges } from "./instruments.js";

/** The sampling timer's period: a sample is the time between its ticks less this. */
const RESOLUTION_MS = 10;

/** One window of the event loop: delays in ms, utilization 0 to 1. */
export interface EventLoopWindow {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
  readonly utilization: number;
}

/** Samples this process's event loop; `read()` returns the window since the previous read (or the start) and starts the next. */
export function eventLoopSampler(): { read(): EventLoopWindow; stop(): void } {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  let since: EventLoopUtilization = performance.eventLoopUtilization();
  // The histogram holds nanoseconds between ticks, the period included.
  const delay = (ns: number): number => (Number.isFinite(ns) && histogram.count > 0 ? Math.max(0, ns / 1e6 - RESOLUTION_MS) : 0);
  return {
    read() {
      const now = performance.eventLoopUtilization();
      const window = {
        p50: delay(histogram.percentile(50)),
        p99: delay(histogram.percentile(99)),
        max: delay(histogram.max),
        mean: delay(histogram.mean),
        utilization: performance.eventLoopUtilization(now, since).utilization,
      };
      histogram.reset();
      since = now;
      return window;
    },
    stop: () => histogram.disable(),
  };
}

/** Reports the sampler's windows as the catalog's nodejs.eventloop gauges (seconds), one window per collection. */
export function observeEventLoop(): { stop(): void } {
  const sampler = eventLoopSampler();
  const gauges = observeGauges(
    {
      p50: METRICS.eventLoopDelayP50,
      p99: METRICS.eventLoopDelayP99,
      max: METRICS.eventLoopDelayMax,
      mean: METRICS.eventLoopDelayMean,
      utilization: METRICS.eventLoopUtilization,
    },
    () => {
      const w = sampler.read();
      return Promise.resolve({ p50: w.p50 / 1000, p99: w.p99 / 1000, max: w.max / 1000, mean: w.mean / 1000, utilization: w.utilization });
    },
  );
  return {
    stop() {
      gauges.stop();
      sampler.stop();
    },
  };
}
