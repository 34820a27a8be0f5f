/**
 * The server's edges in time: a client that goes away mid-stream stops the stream at once, and
 * close() ends in-flight streams instead of waiting for them. "At once" is told from "when the
 * answer ends" (a minute here), not measured against a small bound: these run beside every other
 * package's tests on two cores, where 100 ms was once missed.
 */
import { APIUserAbortError } from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { defineScenario } from "./scenario.js";
import { startOfflineModel } from "./server.js";
import { eventually } from "@metaharness/service-kit/testing";
import { body, sdk, user } from "./testing.js";

/** 625 tokens at 10 a second: the answer would take about a minute to finish. */
const slow = defineScenario("slow", [{ text: "word ".repeat(500), ttftMs: 10, tokensPerSecond: 10 }]);
/** Far below the minute the answer would take, far above a busy machine's delays. */
const AT_ONCE_MS = 5_000;

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  await eventually(() => Promise.resolve(check() ? true : undefined), "the condition", timeoutMs);
}

describe("lifecycle", () => {
  it("stops streaming when the client aborts", async () => {
    const model = await startOfflineModel({ scenarios: [slow] });
    try {
      const stream = sdk(model).messages.stream(body([user("[scenario:slow] go")]));
      await new Promise<void>((resolve) => stream.once("text", () => resolve()));
      const abortedAt = Date.now();
      stream.abort();
      await expect(stream.finalMessage()).rejects.toBeInstanceOf(APIUserAbortError);
      await until(() => model.requests[0]?.outcome === "aborted");
      expect((model.requests[0]?.finishedAt ?? Infinity) - abortedAt).toBeLessThan(AT_ONCE_MS);
    } finally {
      await model.close();
    }
  }, 30_000);

  it("close() ends in-flight streams at once, and is idempotent", async () => {
    const model = await startOfflineModel({ scenarios: [slow] });
    const stream = sdk(model).messages.stream(body([user("[scenario:slow] go")]));
    const outcome = stream.finalMessage().then(
      () => "completed",
      () => "failed",
    );
    await new Promise<void>((resolve) => stream.once("text", () => resolve()));
    const started = Date.now();
    await Promise.all([model.close(), model.close()]);
    expect(Date.now() - started).toBeLessThan(AT_ONCE_MS);
    expect(await outcome).toBe("failed");
  }, 30_000);
});
