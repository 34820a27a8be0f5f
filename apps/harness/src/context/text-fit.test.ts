/** fitTexts and estimateTokens with the blocks beyond text that tool results and messages carry. */
import type Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { estimateTokens } from "./messages.js";
import { fitTexts } from "./text-fit.js";

describe("fitting a window to its budget", () => {
  it("cuts search results and plain-text documents inside tool results, not only text", () => {
    const messages: Anthropic.MessageParam[] = [
      { role: "user", content: "look it up" },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "search", input: {} }] },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: [
              { type: "search_result", source: "kb://1", title: "big", content: [{ type: "text", text: "s".repeat(400_000) }] },
              { type: "document", source: { type: "text", media_type: "text/plain", data: "d".repeat(100_000) } },
            ],
          },
        ],
      },
    ];
    const budget = 20_000;
    const fitted = fitTexts(messages, (m) => estimateTokens(m) <= budget);
    expect(estimateTokens(messages)).toBeGreaterThan(100_000);
    expect(estimateTokens(fitted)).toBeLessThanOrEqual(budget);
    expect(JSON.stringify(fitted)).toContain("characters cut to fit the context window");
  });

  it("counts a base64 image as what the API charges for it, not its length", () => {
    const image = (bytes: number) => ({ type: "image", source: { type: "base64", media_type: "image/png", data: "A".repeat(bytes) } });
    expect(estimateTokens(image(1_000_000))).toBe(estimateTokens(image(10)));
    expect(estimateTokens(image(1_000_000))).toBeLessThan(2_000);
    // As a log event holds it (content.proto), which the window's cut sizes.
    const stored = (bytes: number) => ({ block: { $case: "image", value: { source: { type: "base64", mediaType: "image/png", data: "A".repeat(bytes) } } } });
    expect(estimateTokens(stored(1_000_000))).toBeLessThan(2_000);
  });
});
