import { describe, expect, it } from "vitest";
import { kafkajsRequestQueue, stopKafkajsIdleLoop } from "./kafkajs-idle-loop.js";

const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

function queue(): { pending: unknown[]; throttledUntil: number; throttleCheckTimeoutId: unknown; checkPendingRequests(): void; destroy(): void } {
  const RequestQueue = kafkajsRequestQueue();
  return new RequestQueue({ maxInFlightRequests: 1, requestTimeout: 1000, enforceRequestTimeout: false, clientId: "test", broker: "test:9092", logger: quiet }) as never;
}

describe("kafkajs's idle timer loop", () => {
  it("is stopped for the kafkajs this package pins (another version: look at kafkajs-idle-loop.ts again)", () => {
    expect(stopKafkajsIdleLoop()).toBe(true);
    expect(stopKafkajsIdleLoop()).toBe(true);
  });

  it("arms no timer when nothing is pending and nothing throttles (kafkajs 2.2.4 armed one that fired at once, for ever)", () => {
    stopKafkajsIdleLoop();
    const q = queue();
    q.checkPendingRequests();
    expect(q.throttleCheckTimeoutId).toBeNull();
    q.destroy();
  });

  it("still checks again later while requests are pending or a throttle runs", async () => {
    stopKafkajsIdleLoop();
    const throttled = queue();
    throttled.throttledUntil = Date.now() + 20;
    throttled.checkPendingRequests();
    expect(throttled.throttleCheckTimeoutId).not.toBeNull();
    // Once the throttle is over, the check runs and, with nothing pending, arms nothing more.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(throttled.throttleCheckTimeoutId).toBeNull();
    throttled.destroy();

    const waiting = queue();
    waiting.throttledUntil = Date.now() + 60_000;
    waiting.pending.push({});
    waiting.checkPendingRequests();
    expect(waiting.throttleCheckTimeoutId).not.toBeNull();
    waiting.pending.length = 0;
    waiting.destroy();
  });
});
