/**
 * The meter provider end to end through its Prometheus endpoint: series named as the catalog says,
 * only declared labels (a key outside the catalog is dropped even when a caller slips it past the
 * types), instruments made before the provider started work once it does, and shutdown closes the
 * endpoint.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTelemetry, type Telemetry } from "../start.js";
import { METRICS, promName, type MetricDef } from "./catalog.js";
import { counter, histogram, upDownCounter, type Labels } from "./instruments.js";

// Made before any provider exists, as a module's constants are.
const toolCalls = counter(METRICS.toolCalls);
const ttft = histogram(METRICS.ttft);
const streams = upDownCounter(METRICS.sseStreams);

let telemetry: Telemetry;
let url: string;

beforeAll(async () => {
  telemetry = startTelemetry({ serviceName: "metrics-test", metrics: { prometheusPort: 0 } });
  url = (await telemetry.metricsUrl())!;
});
afterAll(() => telemetry.shutdown());

describe("the metrics endpoint", () => {
  it("serves the catalog's series with only their declared labels", async () => {
    toolCalls.add(1, { "gen_ai.tool.name": "bash", tool_kind: "sandbox", outcome: "ok" });
    const sneaky = { "gen_ai.tool.name": "bash", tool_kind: "sandbox", outcome: "error", session_id: "sesn_0123" } as Labels<string>;
    toolCalls.add(1, sneaky);
    ttft.record(0.25, { "gen_ai.request.model": "claude-test", "gen_ai.operation.name": "chat" });
    streams.add(1);
    const text = await (await fetch(url)).text();
    expect(text).toContain(`${promName(METRICS.toolCalls)}{gen_ai_tool_name="bash",tool_kind="sandbox",outcome="ok"} 1`);
    expect(text).toContain(`${promName(METRICS.toolCalls)}{gen_ai_tool_name="bash",tool_kind="sandbox",outcome="error"} 1`);
    expect(text).not.toContain("sesn_0123");
    expect(text).toMatch(/gen_ai_client_operation_time_to_first_chunk_bucket\{gen_ai_operation_name="chat",gen_ai_request_model="claude-test",le="0.25"\} 1/);
    expect(text).toContain("metaharness_gateway_sse_streams 1");
  });

  it("reports the event loop's delay since the previous scrape", async () => {
    const gauge = (text: string, d: MetricDef): number => Number(new RegExp(`^${promName(d)} (\\S+)$`, "m").exec(text)?.[1]);
    await (await fetch(url)).text(); // starts a new window
    // The sampler measures between its ticks and a new window forgets the last tick: wait for a
    // timer due after its next tick (10 ms), which libuv runs after that tick.
    await new Promise((resolve) => setTimeout(resolve, 25));
    const until = performance.now() + 120;
    while (performance.now() < until) {
      // The loop held for 120 ms: the sampler's next tick runs that late.
    }
    // That tick, overdue since the hold, runs in the next timers phase, before this timer (due
    // later); a scrape sent at once could be answered before that phase.
    await new Promise((resolve) => setTimeout(resolve, 0));
    const text = await (await fetch(url)).text();
    expect(gauge(text, METRICS.eventLoopDelayMax)).toBeGreaterThanOrEqual(0.1);
    expect(gauge(text, METRICS.eventLoopDelayP50)).toBeGreaterThanOrEqual(0);
    expect(gauge(text, METRICS.eventLoopUtilization)).toBeGreaterThan(0);
  });

  it("answers 404 off /metrics", async () => {
    expect((await fetch(url.replace("/metrics", "/other"))).status).toBe(404);
  });

  it("a kind mismatch is refused where the instrument is made", () => {
    expect(() => counter(METRICS.ttft as never)).toThrow(/is a histogram/);
  });
});
