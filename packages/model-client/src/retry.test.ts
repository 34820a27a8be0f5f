/**
 * streamMessage's failure handling against the offline model: what is retried (429 honouring
 * retry-after, 529, network, midstream overloaded) and how visibly, what fails at once (400, 401,
 * 403, 413), what happens when a failed attempt had already delivered output, and cancellation.
 */
import { defineScenario } from "@metaharness/offline-model";
import { describe, expect, it } from "vitest";
import { ModelError } from "./model-error.js";
import type { RetryInfo } from "./types.js";
import { ask, client, useOfflineModel } from "./testing.js";

const ANSWER = "This answer arrives in full on the attempt that succeeds.";
const server = useOfflineModel([
  defineScenario("rate-limited", [{ text: ANSWER, failFirst: { times: 1, status: 429, retryAfterSeconds: 1 } }]),
  defineScenario("overloaded", [{ text: ANSWER, failFirst: { times: 100, status: 529 } }]),
  defineScenario("network", [{ text: ANSWER, failFirst: { times: 2, status: "network" } }]),
  defineScenario("midstream", [{ text: ANSWER, failFirst: { times: 1, status: "midstream_overloaded" } }]),
  defineScenario("forbidden", [{ text: ANSWER, failFirst: { times: 1, status: 403 } }]),
  defineScenario("too-large", [{ text: ANSWER, failFirst: { times: 1, status: 413 } }]),
  defineScenario("slow", [{ text: "word ".repeat(400), ttftMs: 20, tokensPerSecond: 100 }]),
]);

async function rejection(promise: Promise<unknown>): Promise<ModelError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ModelError)) throw new Error(`expected a ModelError, got ${String(err)}`);
  return err;
}

function sentTo(scenario: string, nonce: string): number {
  const content = `[scenario:${scenario}] ${nonce}`;
  return server.get().requests.filter((r) => JSON.stringify(r.body).includes(JSON.stringify(content))).length;
}

describe("retries", () => {
  it("retries a 429, waiting retry-after capped at maxDelayMs", async () => {
    const retries: RetryInfo[] = [];
    const result = await client(server.get()).streamMessage(ask("rate-limited", "a"), { onRetry: (info) => retries.push(info) });
    expect(result.attempts).toBe(2);
    expect(result.message.content[0]).toMatchObject({ text: ANSWER });
    expect(retries).toHaveLength(1);
    expect(retries[0]?.attempt).toBe(1);
    expect(retries[0]?.delayMs).toBe(20); // retry-after 1 s, capped by maxDelayMs
    expect(retries[0]?.error).toMatchObject({ code: "RESOURCE_EXHAUSTED", status: 429, errorType: "model_rate_limited_error", retryAfterMs: 1000 });
  });

  it("gives up on 529 after maxAttempts, as model_overloaded_error", async () => {
    const retries: number[] = [];
    const err = await rejection(
      client(server.get(), { retry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 5 } }).streamMessage(ask("overloaded", "b"), {
        onRetry: ({ attempt }) => retries.push(attempt),
      }),
    );
    expect(err).toMatchObject({ code: "UNAVAILABLE", status: 529, errorType: "model_overloaded_error", attempts: 3 });
    expect(err.retryable).toBe(true);
    expect(err.retryStatus).toBe("exhausted");
    expect(retries).toEqual([1, 2]);
    expect(sentTo("overloaded", "b")).toBe(3);
  });

  it("retries dropped connections", async () => {
    const result = await client(server.get()).streamMessage(ask("network", "c"));
    expect(result.attempts).toBe(3);
  });

  it.each([
    ["a 400", { messages: [{ role: "assistant" as const, content: "x" }] }, "INVALID_ARGUMENT", 400],
    ["a 403", ask("forbidden", "d"), "PERMISSION_DENIED", 403],
    ["a 413", ask("too-large", "d"), "INVALID_ARGUMENT", 413],
  ])("fails at once on %s", async (_name, params, code, status) => {
    const before = server.get().requests.length;
    const retries: RetryInfo[] = [];
    const err = await rejection(client(server.get()).streamMessage(params, { onRetry: (i) => retries.push(i) }));
    expect(err).toMatchObject({ code, status, errorType: "model_request_failed_error", attempts: 1 });
    expect(err.retryable).toBe(false);
    expect(err.retryStatus).toBe("terminal");
    expect(retries).toEqual([]);
    expect(server.get().requests.length - before).toBe(1);
  });

  it("fails at once on a bad key: UNAUTHENTICATED", async () => {
    const { startOfflineModel } = await import("@metaharness/offline-model");
    const guarded = await startOfflineModel({ apiKey: "the-key" });
    try {
      const err = await rejection(client(guarded, { apiKey: "wrong" }).streamMessage(ask("default")));
      expect(err).toMatchObject({ code: "UNAUTHENTICATED", status: 401, attempts: 1 });
      expect(guarded.requests).toHaveLength(1);
    } finally {
      await guarded.close();
    }
  });
});

describe("an overloaded error mid-stream", () => {
  it("is retried silently when no output reached the hooks", async () => {
    const result = await client(server.get()).streamMessage(ask("midstream", "e"));
    expect(result.attempts).toBe(2);
    expect(result.message.content[0]).toMatchObject({ text: ANSWER });
  });

  it("is retried after onAttemptDiscarded, so the caller can restart cleanly", async () => {
    let shown = "";
    const events: string[] = [];
    const result = await client(server.get()).streamMessage(ask("midstream", "f"), {
      onTextDelta: (t) => (shown += t),
      onAttemptDiscarded: ({ attempt, error }) => {
        events.push(`discard ${attempt} ${error.errorType} after ${JSON.stringify(shown)}`);
        shown = "";
      },
      onRetry: ({ attempt }) => events.push(`retry ${attempt}`),
    });
    expect(events).toEqual([`discard 1 model_overloaded_error after ${JSON.stringify(ANSWER.slice(0, 36))}`, "retry 1"]);
    expect(shown).toBe(ANSWER);
    expect(result.attempts).toBe(2);
  });

  it("is not retried when output was delivered and cannot be discarded", async () => {
    let shown = "";
    const err = await rejection(client(server.get()).streamMessage(ask("midstream", "g"), { onTextDelta: (t) => (shown += t) }));
    expect(err).toMatchObject({ code: "UNAVAILABLE", status: undefined, errorType: "model_overloaded_error", partialOutput: true, attempts: 1 });
    expect(err.retryable).toBe(true); // the caller may resend the whole turn itself
    expect(shown).toBe(ANSWER.slice(0, 36));
  });
});

describe("cancellation", () => {
  it("aborting mid-stream cancels the HTTP stream at once", async () => {
    const controller = new AbortController();
    let abortedAt = 0;
    const pending = client(server.get()).streamMessage(ask("slow", "h"), {
      signal: controller.signal,
      onTextDelta: () => {
        if (abortedAt === 0) {
          abortedAt = performance.now();
          controller.abort();
        }
      },
    });
    const err = await rejection(pending);
    const tookMs = performance.now() - abortedAt;
    expect(err).toMatchObject({ code: "CANCELLED" });
    expect(err.retryable).toBe(false);
    // The stream had ~4 s to go (400 words at 100 tokens/s): ending well before that is "at once"
    // on any machine, without a wall-clock bound a busy one could miss.
    expect(tookMs).toBeLessThan(1_000);
    await expect.poll(() => server.get().requests.findLast((r) => r.outcome !== undefined && JSON.stringify(r.body).includes("slow] h"))?.outcome).toBe("aborted");
  });

  it("aborting during the wait before a retry cancels at once", async () => {
    const controller = new AbortController();
    const started = performance.now();
    const pending = client(server.get(), { retry: { maxAttempts: 5, initialDelayMs: 10_000, maxDelayMs: 10_000 } }).streamMessage(
      ask("overloaded", "i"),
      { signal: controller.signal, onRetry: () => controller.abort() },
    );
    const err = await rejection(pending);
    expect(err.code).toBe("CANCELLED");
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("an already aborted signal sends nothing", async () => {
    const before = server.get().requests.length;
    const err = await rejection(client(server.get()).streamMessage(ask("slow", "j"), { signal: AbortSignal.abort() }));
    expect(err.code).toBe("CANCELLED");
    expect(server.get().requests.length).toBe(before);
  });
});
