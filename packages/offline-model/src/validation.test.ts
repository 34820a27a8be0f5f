/**
 * Requests the real API would refuse are refused here too, with a 400 invalid_request_error whose
 * message names the field; so are requests a scenario cannot answer. The SDK surfaces them as
 * BadRequestError with the message in `apiMessage`.
 */
import { BadRequestError } from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { defineScenario } from "./scenario.js";
import { body, post, sdk, useOfflineModel, user } from "./testing.js";

const server = useOfflineModel({
  scenarios: [
    defineScenario("one-step", [{ text: "only" }]),
    defineScenario("throws", [
      () => {
        throw new Error("boom");
      },
    ]),
  ],
});

const base = { model: "m", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };
const toolUse = { type: "tool_use", id: "toolu_1", name: "t", input: {} };
const tool = { name: "t", input_schema: { type: "object" } };
const cc = { type: "ephemeral" };

const cases: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
  ["model missing", { ...base, model: undefined }, "model: Field required"],
  ["max_tokens missing", { ...base, max_tokens: undefined }, "max_tokens: Field required"],
  ["max_tokens zero", { ...base, max_tokens: 0 }, "max_tokens: Input should be greater than or equal to 1"],
  ["no messages", { ...base, messages: [] }, "messages: List should have at least 1 item after validation, not 0"],
  ["bad role", { ...base, messages: [{ role: "system", content: "x" }] }, "messages.0.role: Input should be 'user' or 'assistant'"],
  ["assistant first", { ...base, messages: [{ role: "assistant", content: "x" }] }, 'messages: first message must use the "user" role'],
  [
    "two user turns",
    { ...base, messages: [user("a"), user("b")] },
    'messages: roles must alternate between "user" and "assistant", but found multiple "user" roles in a row',
  ],
  [
    "empty user content",
    { ...base, messages: [user("")] },
    "messages: all messages must have non-empty content except for the optional final assistant message",
  ],
  [
    "unknown block",
    { ...base, messages: [{ role: "user", content: [{ type: "video" }] }] },
    "messages.0.content.0.type: Input tag 'video' found using 'type' does not match any of the expected tags",
  ],
  [
    "stray tool_result",
    { ...base, messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_x", content: "r" }] }] },
    "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x.",
  ],
  [
    "unanswered tool_use",
    { ...base, tools: [tool], messages: [user("a"), { role: "assistant", content: [toolUse] }, user("b")] },
    "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1.",
  ],
  [
    "tool_use from the user",
    { ...base, messages: [{ role: "user", content: [toolUse] }] },
    "messages.0.content.0: `tool_use` blocks can only be in `assistant` messages",
  ],
  [
    "five cache breakpoints",
    {
      ...base,
      system: [1, 2, 3, 4, 5].map((n) => ({ type: "text", text: `s${n}`, cache_control: cc })),
    },
    "A maximum of 4 blocks with cache_control may be provided. Found 5.",
  ],
  ["bad cache ttl", { ...base, system: [{ type: "text", text: "s", cache_control: { type: "ephemeral", ttl: "2h" } }] }, "system.0.cache_control.ttl: Input should be '5m' or '1h'"],
  ["small thinking budget", { ...base, thinking: { type: "enabled", budget_tokens: 100 } }, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"],
  ["budget over max_tokens", { ...base, thinking: { type: "enabled", budget_tokens: 2000 } }, "`max_tokens` must be greater than `thinking.budget_tokens`"],
  ["duplicate tools", { ...base, tools: [tool, tool] }, "tools: Tool names must be unique."],
  ["bad tool name", { ...base, tools: [{ ...tool, name: "has space" }] }, "tools.0.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"],
  ["tool schema missing", { ...base, tools: [{ name: "t" }] }, "tools.0.input_schema: Field required"],
  ["tool_choice unknown tool", { ...base, tools: [tool], tool_choice: { type: "tool", name: "zzz" } }, "tool_choice.name: Tool 'zzz' not found in provided tools"],
  ["temperature too high", { ...base, temperature: 1.5 }, "temperature: Input should be less than or equal to 1"],
  ["unknown scenario", { ...base, messages: [user("[scenario:nope] hi")] }, 'unknown offline scenario "nope" (known: default, one-step, throws)'],
  [
    "scenario exhausted",
    { ...base, messages: [user("[scenario:one-step] hi"), { role: "assistant", content: "only" }, user("more")] },
    'offline scenario "one-step" has 1 step(s), but the request already holds 1 assistant turn(s) and asks for step 1',
  ],
  ["step function throws", { ...base, messages: [user("[scenario:throws] hi")] }, 'offline scenario "throws" step 0: boom'],
  [
    "search results with and without citations",
    {
      ...base,
      messages: [
        {
          role: "user",
          content: [
            { type: "search_result", source: "a", title: "A", content: [{ type: "text", text: "a" }], citations: { enabled: true } },
            { type: "text", text: "and" },
          ],
        },
        { role: "assistant", content: [toolUse] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "search_result", source: "b", title: "B", content: [{ type: "text", text: "b" }] }] }] },
      ],
    },
    "Citations must be enabled on all search results or on none of them",
  ],
];

describe("request validation", () => {
  it.each(cases)("%s", async (_name, payload, message) => {
    const res = await post(server.get(), "/v1/messages", payload);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect((res.json as { error: { message: string } }).error.message).toContain(message);
  });

  it("accepts response blocks echoed back as they came (citations, caller)", async () => {
    const client = sdk(server.get());
    const first = await client.messages.create(body([user("hello")]));
    const second = await client.messages.create(body([user("hello"), { role: "assistant", content: first.content }, user("again")]));
    expect(second.stop_reason).toBe("end_turn");
  });

  it("surfaces as BadRequestError through the SDK", async () => {
    const err = await sdk(server.get())
      .messages.create(body([user("a"), { role: "user", content: "b" }]))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).apiMessage).toContain("roles must alternate");
  });

  it("checks headers and the body's syntax first", async () => {
    const model = server.get();
    expect((await post(model, "/v1/messages", base, { "x-api-key": "" })).status).toBe(401);
    const noVersion = await fetch(`${model.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "k" },
      body: JSON.stringify(base),
    });
    expect(noVersion.status).toBe(400);
    expect(await noVersion.json()).toMatchObject({ error: { message: "anthropic-version: header is required" } });
    const badJson = await post(model, "/v1/messages", "{not json");
    expect(badJson.status).toBe(400);
    expect(badJson.json).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
  });
});
