/**
 * The server's edges in time: a client that goes away mid-stream stops the stream at once, and
 * close() ends in-flight streams instead of waiting for them.
 */
import { APIUserAbortError } from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { defineScenario } from "./scenario.js";
import { startOfflineModel } from "./server.js";
import { eventually } from "@metaharness/service-kit/testing";
import { body, sdk, user } from "./testing.js";

const slow = defineScenario("slow", [{ text: "word ".repeat(500), ttftMs: 10, tokensPerSecond: 50 }]);

async function until(check: () => boolean, timeoutMs = 2000): Promise<void> {
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
      expect((model.requests[0]?.finishedAt ?? Infinity) - abortedAt).toBeLessThan(100);
    } finally {
      await model.close();
    }
  });

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
    expect(Date.now() - started).toBeLessThan(500);
    expect(await outcome).toBe("failed");
  });
});
