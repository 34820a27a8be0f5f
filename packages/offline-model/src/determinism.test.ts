/**
 * The server is stateless with respect to the conversation: a resent request (after a harness
 * crash) gets the same answer, ids and signatures included, streamed or not; only failFirst's
 * attempt counter remembers anything, and it counts each distinct request separately.
 */
import { describe, expect, it } from "vitest";
import { defineScenario } from "./scenario.js";
import { body, sdk, useOfflineModel, user, weatherTool } from "./testing.js";

const server = useOfflineModel({
  scenarios: [
    defineScenario("mixed", [
      (ctx) => ({
        thinking: `Thinking about ${ctx.lastUserText}`,
        text: `Answering ${ctx.lastUserText}`,
        toolUses: [{ name: "get_weather", input: { city: ctx.lastUserText.length.toString() } }],
      }),
    ]),
    defineScenario("fail-once", [{ text: "fine", failFirst: { times: 1, status: 500 } }]),
  ],
});

describe("determinism", () => {
  it("answers a resent request identically, streamed or not", async () => {
    const client = sdk(server.get());
    const params = body([user("[scenario:mixed] Lisbon")], {
      tools: [weatherTool],
      max_tokens: 2048,
      thinking: { type: "enabled", budget_tokens: 1024 },
    });
    const a = await client.messages.create(params);
    const b = await client.messages.create(params);
    // The stream helper's ParsedMessage adds `parsed_output` (null without an output format).
    const { parsed_output: parsed, ...c } = await client.messages.stream(params).finalMessage();
    expect(parsed).toBeNull();
    expect(b).toEqual(a);
    expect(JSON.parse(JSON.stringify(c))).toEqual(a);
    expect(a.content.map((block) => block.type)).toEqual(["thinking", "text", "tool_use"]);
  });

  it("gives different conversations different ids", async () => {
    const client = sdk(server.get());
    const a = await client.messages.create(body([user("[scenario:mixed] Lisbon")], { tools: [weatherTool] }));
    const b = await client.messages.create(body([user("[scenario:mixed] Porto")], { tools: [weatherTool] }));
    expect(a.id).not.toBe(b.id);
    expect(a.content.at(-1)).not.toEqual(b.content.at(-1));
  });

  it("counts failFirst attempts per distinct request", async () => {
    const client = sdk(server.get());
    for (const nonce of ["one", "two"]) {
      await expect(client.messages.create(body([user(`[scenario:fail-once] ${nonce}`)]))).rejects.toMatchObject({ status: 500 });
      await expect(client.messages.create(body([user(`[scenario:fail-once] ${nonce}`)]))).resolves.toMatchObject({ stop_reason: "end_turn" });
    }
  });
});
