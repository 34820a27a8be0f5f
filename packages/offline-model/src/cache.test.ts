/**
 * Simulated prompt caching: the second request with the same prefix reads what the first wrote,
 * consecutive turns of a conversation hit the previous turn's breakpoint (the real API's lookback),
 * entries expire after their TTL, and the three usage counters always add up to the whole prompt.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { PromptCache } from "./prompt-cache.js";
import { segmentsOf, totalTokens } from "./segments.js";
import { body, post, sdk, useOfflineModel, user, weatherTool } from "./testing.js";
import type { MessagesRequest } from "./wire.js";

const server = useOfflineModel();
const SYSTEM: Anthropic.TextBlockParam[] = [
  { type: "text", text: `You are a careful agent. ${"Follow the rules. ".repeat(200)}`, cache_control: { type: "ephemeral" } },
];

function inputTotal(usage: Anthropic.Usage): number {
  return usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
}

describe("prompt caching through the API", () => {
  it("writes the prefix on the first request and reads it on the next", async () => {
    const client = sdk(server.get());
    const first = await client.messages.create(body([user("cache one")], { system: SYSTEM, tools: [weatherTool] }));
    const second = await client.messages.stream(body([user("cache two, different")], { system: SYSTEM, tools: [weatherTool] })).finalMessage();

    expect(first.usage.cache_creation_input_tokens).toBeGreaterThan(800);
    expect(first.usage.cache_read_input_tokens).toBe(0);
    expect(first.usage.cache_creation?.ephemeral_5m_input_tokens).toBe(first.usage.cache_creation_input_tokens);
    expect(second.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens);
    expect(second.usage.cache_creation_input_tokens).toBe(0);
    expect(second.usage.input_tokens).toBeGreaterThan(0);
  });

  it("lets each turn of a conversation read the previous turn's prefix", async () => {
    const client = sdk(server.get());
    const cached = (text: string): Anthropic.MessageParam => ({
      role: "user",
      content: [{ type: "text", text, cache_control: { type: "ephemeral" } }],
    });
    const plain = (text: string): Anthropic.MessageParam => ({ role: "user", content: [{ type: "text", text }] });
    const turn1 = await client.messages.create(body([cached(`turn one ${"a".repeat(400)}`)]));
    const turn2 = await client.messages.create(
      body([plain(`turn one ${"a".repeat(400)}`), { role: "assistant", content: turn1.content }, cached("turn two")]),
    );
    expect(turn1.usage.cache_creation_input_tokens).toBe(inputTotal(turn1.usage));
    expect(turn2.usage.cache_read_input_tokens).toBe(turn1.usage.cache_creation_input_tokens);
    expect(turn2.usage.cache_creation_input_tokens).toBe(inputTotal(turn2.usage) - (turn2.usage.cache_read_input_tokens ?? 0));
    expect(turn2.usage.input_tokens).toBe(0);
  });

  it("counts tokens like the messages endpoint does", async () => {
    const client = sdk(server.get());
    const params = body([user("count me, please")], { system: "Be brief." });
    const counted = await client.messages.countTokens({ model: params.model, messages: params.messages, system: "Be brief." });
    const message = await client.messages.create(params);
    expect(counted.input_tokens).toBe(inputTotal(message.usage));

    const raw = await post(server.get(), "/v1/messages/count_tokens", { model: "m", messages: [{ role: "user", content: "x" }] });
    expect(raw.status).toBe(200);
  });
});

describe("PromptCache", () => {
  const request = (last: string, ttl?: "1h"): MessagesRequest => ({
    model: "m",
    max_tokens: 10,
    messages: [
      {
        role: "user",
        content: [{ type: "text", text: `${"x".repeat(400)} ${last}`, cache_control: { type: "ephemeral", ...(ttl === undefined ? {} : { ttl }) } }],
      },
    ],
  });

  it("forgets a 5-minute entry after five minutes and keeps a 1-hour one", () => {
    let now = 0;
    const cache = new PromptCache({ now: () => now });
    const short = segmentsOf(request("short"));
    const long = segmentsOf(request("long", "1h"));
    expect(cache.account("m", short).cache_creation_input_tokens).toBe(totalTokens(short));
    expect(cache.account("m", long).cache_creation.ephemeral_1h_input_tokens).toBe(totalTokens(long));
    now = 4 * 60_000;
    expect(cache.account("m", short).cache_read_input_tokens).toBe(totalTokens(short)); // refreshes to 9 min
    now = 9 * 60_000 + 1;
    expect(cache.account("m", short).cache_read_input_tokens).toBe(0);
    expect(cache.account("m", long).cache_read_input_tokens).toBe(totalTokens(long));
  });

  it("keys the cache by model and ignores prefixes under minTokens", () => {
    const cache = new PromptCache({ minTokens: 10_000 });
    const segments = segmentsOf(request("a"));
    expect(cache.account("m", segments).cache_creation_input_tokens).toBe(0);
    const other = new PromptCache();
    other.account("m", segments);
    expect(other.account("other-model", segments).cache_read_input_tokens).toBe(0);
  });
});
