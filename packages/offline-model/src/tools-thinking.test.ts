/**
 * Tool use and thinking through the real SDK: tool input assembled from input_json_delta chunks,
 * a tool loop where a step function sees the tool_result the harness sent, thinking blocks with
 * signatures that verify when sent back (and fail when altered), max_tokens and stop sequences.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { BadRequestError } from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { signThinking } from "./ids.js";
import { defineScenario } from "./scenario.js";
import { body, sdk, useOfflineModel, user, weatherTool } from "./testing.js";

const BIG_INPUT = { city: "Reykjavík", units: "metric", days: [1, 2, 3], note: "x".repeat(120) };

const server = useOfflineModel({
  scenarios: [
    defineScenario("weather", [
      { text: "Let me check.", toolUses: [{ name: "get_weather", input: BIG_INPUT }] },
      (ctx) => ({ text: `The tool said: ${ctx.lastToolResult?.content ?? "nothing"}` }),
    ]),
    defineScenario("chain", [
      { toolUses: [{ name: "get_weather", input: { city: "Oslo" } }] },
      (ctx) => ({ toolUses: [{ name: "get_weather", input: { city: `${ctx.lastToolResult?.content ?? ""}-next` } }] }),
      { text: "done" },
    ]),
    defineScenario("think", [{ thinking: "The user greets me. I should greet back.", text: "Hi!" }]),
    defineScenario("think-tool", [{ toolUses: [{ name: "get_weather", input: { city: "Rome" } }] }, { text: "ok" }]),
    defineScenario("wordy", [{ text: "one two three four five six seven eight nine ten. STOP here. more" }]),
  ],
});

function toolResult(message: Anthropic.Message, content: string): Anthropic.MessageParam {
  const use = message.content.find((b): b is Anthropic.ToolUseBlock => b.type === "tool_use");
  if (use === undefined) throw new Error("no tool_use block");
  return { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content }] };
}

describe("tool use", () => {
  it("assembles the tool input from input_json_delta chunks", async () => {
    const client = sdk(server.get());
    const partials: string[] = [];
    let started: { id: string; name: string } | undefined;
    const stream = client.messages.stream(body([user("[scenario:weather] weather?")], { tools: [weatherTool] }));
    stream.on("streamEvent", (event) => {
      if (event.type === "content_block_start" && event.content_block.type === "tool_use") started = event.content_block;
      if (event.type === "content_block_delta" && event.delta.type === "input_json_delta") partials.push(event.delta.partial_json);
    });
    const message = await stream.finalMessage();

    expect(partials[0]).toBe(""); // the real API opens with an empty partial_json
    expect(partials.length).toBeGreaterThan(5);
    expect(JSON.parse(partials.join(""))).toEqual(BIG_INPUT);
    expect(message.stop_reason).toBe("tool_use");
    const use = message.content[1];
    expect(use).toMatchObject({ type: "tool_use", name: "get_weather", input: BIG_INPUT });
    expect(use?.type === "tool_use" && use.id).toMatch(/^toolu_01[0-9A-Za-z]{22}$/);
    expect(started?.name).toBe("get_weather");
  });

  it("lets a step function see the tool result the harness sent back", async () => {
    const client = sdk(server.get());
    const ask = [user("[scenario:weather] weather?")];
    const first = await client.messages.create(body(ask, { tools: [weatherTool] }));
    const second = await client.messages
      .stream(body([...ask, { role: "assistant", content: first.content }, toolResult(first, "12°C and windy")], { tools: [weatherTool] }))
      .finalMessage();
    expect(second.content).toEqual([{ type: "text", text: "The tool said: 12°C and windy", citations: null }]);
    expect(second.stop_reason).toBe("end_turn");
  });

  it("computes a tool input from an earlier tool result", async () => {
    const client = sdk(server.get());
    const messages: Anthropic.MessageParam[] = [user("[scenario:chain] go")];
    const first = await client.messages.create(body(messages, { tools: [weatherTool] }));
    messages.push({ role: "assistant", content: first.content }, toolResult(first, "Oslo-result"));
    const second = await client.messages.create(body(messages, { tools: [weatherTool] }));
    expect(second.content[0]).toMatchObject({ type: "tool_use", input: { city: "Oslo-result-next" } });
  });

  it("refuses a step that calls a tool the request does not offer", async () => {
    const client = sdk(server.get());
    const error = await client.messages.create(body([user("[scenario:weather] weather?")])).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).apiMessage).toContain('calls tool "get_weather", which the request does not define');
  });
});

describe("thinking", () => {
  const thinking: Anthropic.ThinkingConfigParam = { type: "enabled", budget_tokens: 1024 };

  it("streams thinking_delta then signature_delta, only when thinking is on", async () => {
    const client = sdk(server.get());
    const thoughts: string[] = [];
    let signature: string | undefined;
    const stream = client.messages.stream(body([user("[scenario:think] hi")], { max_tokens: 2048, thinking }));
    stream.on("thinking", (delta) => thoughts.push(delta));
    stream.on("signature", (s) => (signature = s));
    const message = await stream.finalMessage();

    expect(thoughts.join("")).toBe("The user greets me. I should greet back.");
    expect(signature).toBe(signThinking("The user greets me. I should greet back."));
    expect(message.content.map((b) => b.type)).toEqual(["thinking", "text"]);
    expect(message.usage.output_tokens_details?.thinking_tokens).toBeGreaterThan(0);

    const plain = await client.messages.create(body([user("[scenario:think] hi")]));
    expect(plain.content.map((b) => b.type)).toEqual(["text"]);
  });

  it("accepts its thinking back unmodified and rejects a tampered signature", async () => {
    const client = sdk(server.get());
    const ask = [user("[scenario:think-tool] weather?")];
    const params = { tools: [weatherTool], max_tokens: 2048, thinking };
    const first = await client.messages.stream(body(ask, params)).finalMessage();
    expect(first.content.map((b) => b.type)).toEqual(["thinking", "tool_use"]);

    const ok = await client.messages.create(body([...ask, { role: "assistant", content: first.content }, toolResult(first, "sunny")], params));
    expect(ok.content.at(-1)).toMatchObject({ type: "text", text: "ok" });

    const tampered = first.content.map((b) => (b.type === "thinking" ? { ...b, thinking: `${b.thinking} (edited)` } : b));
    const bad = await client.messages
      .create(body([...ask, { role: "assistant", content: tampered }, toolResult(first, "sunny")], params))
      .catch((e: unknown) => e);
    expect((bad as BadRequestError).status).toBe(400);
    expect((bad as BadRequestError).apiMessage).toContain("messages.1.content.0: Invalid `signature` in `thinking` block");

    const dropped = first.content.filter((b) => b.type !== "thinking");
    const missing = await client.messages
      .create(body([...ask, { role: "assistant", content: dropped }, toolResult(first, "sunny")], params))
      .catch((e: unknown) => e);
    expect((missing as BadRequestError).apiMessage).toContain("Expected `thinking` or `redacted_thinking`, but found `tool_use`");
  });
});

describe("stopping early", () => {
  it("cuts the output at max_tokens", async () => {
    const message = await sdk(server.get()).messages.stream(body([user("[scenario:wordy] go")], { max_tokens: 3 })).finalMessage();
    expect(message.stop_reason).toBe("max_tokens");
    expect(message.content[0]).toMatchObject({ type: "text", text: "one two thre" });
    expect(message.usage.output_tokens).toBe(3);
  });

  it("stops at a stop sequence", async () => {
    const message = await sdk(server.get()).messages.create(body([user("[scenario:wordy] go")], { stop_sequences: ["STOP"] }));
    expect(message.stop_reason).toBe("stop_sequence");
    expect(message.stop_sequence).toBe("STOP");
    expect(message.content[0]).toMatchObject({ text: "one two three four five six seven eight nine ten. " });
  });
});
