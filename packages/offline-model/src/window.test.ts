/**
 * The context window: a prompt over `windowTokens` (counted as the prompt cache counts it) is
 * refused as the real API refuses it, a 400 invalid_request_error "prompt is too long: N tokens
 * > M maximum" that the SDK surfaces as BadRequestError; count_tokens gives the same N, and a
 * prompt at the limit is answered.
 */
import { BadRequestError } from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { body, post, sdk, useOfflineModel, user } from "./testing.js";

const WINDOW = 1_000;
const server = useOfflineModel({ windowTokens: WINDOW });

describe("context window", () => {
  it("refuses a prompt over the window with the real API's 400 and counts it as count_tokens does", async () => {
    const request = body([user(`hello ${"x".repeat(WINDOW * 4)}`)]);
    const counted = await sdk(server.get()).messages.countTokens({ model: request.model, messages: request.messages });
    expect(counted.input_tokens).toBeGreaterThan(WINDOW);
    const raw = await post(server.get(), "/v1/messages", request);
    expect(raw.status).toBe(400);
    expect(raw.json).toMatchObject({
      type: "error",
      error: { type: "invalid_request_error", message: `prompt is too long: ${counted.input_tokens} tokens > ${WINDOW} maximum` },
    });
    const err = await sdk(server.get()).messages.create(request).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).message).toContain("prompt is too long");
  });

  it("answers a prompt that fits, with its tokens in usage", async () => {
    const small = body([user("hello")]);
    const counted = await sdk(server.get()).messages.countTokens({ model: small.model, messages: small.messages });
    const message = await sdk(server.get()).messages.create(small);
    expect(message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0) + (message.usage.cache_creation_input_tokens ?? 0)).toBe(counted.input_tokens);
  });
});
