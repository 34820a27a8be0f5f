/**
 * The default context strategy: replay the whole history, with prompt-cache breakpoints on the
 * stable prefix (the system prompt and tools, and the end of the conversation so far), so each
 * request of a session reads the previous one's prefix from the cache.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { ContextInput, ContextStrategy } from "./strategy.js";
import { toMessages } from "./messages.js";

const EPHEMERAL = { type: "ephemeral" } as const;

/** Marks the last block of the last message as a cache breakpoint (returns a copy). */
export function withTailBreakpoint(messages: Anthropic.MessageParam[]): Anthropic.MessageParam[] {
  const out = messages.map((m) => ({ ...m, content: Array.isArray(m.content) ? [...m.content] : m.content }) as Anthropic.MessageParam);
  const last = out[out.length - 1];
  if (last !== undefined && Array.isArray(last.content) && last.content.length > 0) {
    const i = last.content.length - 1;
    const block = last.content[i];
    if (block !== undefined && block.type !== "thinking" && block.type !== "redacted_thinking") {
      last.content[i] = { ...block, cache_control: EPHEMERAL };
    }
  }
  return out;
}

export function systemWithBreakpoint(system: string): Anthropic.TextBlockParam[] | undefined {
  return system === "" ? undefined : [{ type: "text", text: system, cache_control: EPHEMERAL }];
}

export const replayStrategy: ContextStrategy = {
  name: "replay",
  ownTools: [],
  build(input: ContextInput) {
    const tools = input.tools.map((t, i) => (i === input.tools.length - 1 ? { ...t, cache_control: EPHEMERAL } : t));
    const system = systemWithBreakpoint(input.agent?.system ?? "");
    return {
      ...(system === undefined ? {} : { system }),
      ...(tools.length > 0 ? { tools } : {}),
      messages: withTailBreakpoint(toMessages(input.events)),
      ...(input.agent?.model ? { model: input.agent.model } : {}),
      ...(input.agent?.maxTokens ? { max_tokens: input.agent.maxTokens } : {}),
    };
  },
};
