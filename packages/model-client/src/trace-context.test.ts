/**
 * The model request's trace context: while spans are recorded the SDK makes its span of the
 * request (`anthropic.messages.create`, a child of the caller's) and sends it as the parent; while
 * they are not, no SDK span is made and the request carries the caller's own context.
 */
import { defineScenario } from "@metaharness/offline-model";
import { currentSpanIds, startTelemetry, withSpan } from "@metaharness/telemetry";
import { startTestTelemetry } from "@metaharness/telemetry/testing";
import { expect, it } from "vitest";
import { ask, client, useOfflineModel } from "./testing.js";

const server = useOfflineModel([defineScenario("hello", [{ text: "Hello." }])]);

/** The request's traceparent, and the caller's span ids around it. */
async function call(nonce: string): Promise<{ traceparent: string | undefined; caller: { traceId: string; spanId: string } }> {
  const model = server.get();
  return withSpan("step", {}, async () => {
    const caller = currentSpanIds()!;
    await client(model).streamMessage(ask("hello", nonce));
    const request = model.requests.find((r) => JSON.stringify(r.body).includes(nonce));
    return { traceparent: request?.headers["traceparent"], caller };
  });
}

it("sends the caller's context when spans go nowhere", async () => {
  const telemetry = startTelemetry({ serviceName: "model-trace-test" });
  try {
    const { traceparent, caller } = await call("id-only");
    expect(traceparent).toBe(`00-${caller.traceId}-${caller.spanId}-01`);
  } finally {
    await telemetry.shutdown();
  }
});

it("sends the SDK's recorded span of the request, a child of the caller's, when spans are recorded", async () => {
  const recorded = startTestTelemetry("model-trace-test");
  try {
    const { traceparent, caller } = await call("recorded");
    const sdkSpan = recorded.finishedSpans().find((s) => s.name === "anthropic.messages.create");
    expect(sdkSpan?.parentSpanContext?.spanId).toBe(caller.spanId);
    expect(traceparent).toBe(`00-${caller.traceId}-${sdkSpan?.spanContext().spanId}-01`);
  } finally {
    await recorded.telemetry.shutdown();
  }
});
