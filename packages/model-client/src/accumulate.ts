/**
 * Builds the assistant Message from the raw events of `messages.create({ stream: true })`, as the
 * SDK's stream helper (MessageStream) accumulates it, without the helper: its emitter, its async
 * iterator over its own events and the copy of a block at every delta were a fifth of the model
 * request's CPU in the harness (docs/performance.md, "The harness's own CPU per turn"). Blocks are
 * changed in place instead (nothing else sees them before the end), a tool's input is parsed once
 * at the end with the SDK's own partial-JSON parser, as the helper's lazy input parses it, and the
 * same sequences fail with the same AnthropicError messages, so classify.ts reads them alike.
 * accumulate.test.ts checks the result against MessageStream's on the same events.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { AnthropicError } from "@anthropic-ai/sdk";
import { partialParse } from "@anthropic-ai/sdk/_vendor/partial-json-parser/parser";

type Block = Anthropic.ContentBlock;

export class MessageAccumulator {
  private message: Anthropic.Message | undefined;
  /** The streamed input JSON of tool blocks, by content index, as the helper's `__json_buf`. */
  private readonly json = new Map<number, string>();
  private final: Anthropic.Message | undefined;

  /** Adds one event; throws AnthropicError on a message_start inside a message. */
  add(event: Anthropic.RawMessageStreamEvent): void {
    if (event.type === "message_start") {
      if (this.message !== undefined) throw new AnthropicError(`Unexpected event order, got ${event.type} before receiving "message_stop"`);
      this.message = event.message;
      return;
    }
    const message = this.message;
    if (message === undefined) return;
    switch (event.type) {
      case "content_block_start":
        message.content.push({ ...event.content_block });
        return;
      case "content_block_delta":
        this.addDelta(message, event);
        return;
      case "content_block_stop":
        this.settleInput(message, event.index);
        return;
      case "message_delta":
        applyDelta(message, event);
        return;
      case "message_stop":
        for (const index of this.json.keys()) this.settleInput(message, index);
        this.final = message;
        return;
    }
  }

  /**
   * The message of the stream's message_stop; throws AnthropicError as the helper does when the
   * stream ended without one (its end of the request, then its finalMessage()).
   */
  result(): Anthropic.Message {
    if (this.message === undefined) throw new AnthropicError("request ended without sending any chunks");
    if (this.final === undefined) throw new AnthropicError("stream ended without producing a Message with role=assistant");
    return this.final;
  }

  private addDelta(message: Anthropic.Message, event: Anthropic.RawContentBlockDeltaEvent): void {
    const block: Block | undefined = message.content.at(event.index);
    const { delta } = event;
    switch (delta.type) {
      case "text_delta":
        if (block?.type === "text") block.text = (block.text || "") + delta.text;
        return;
      case "citations_delta":
        if (block?.type === "text") block.citations = [...(block.citations ?? []), delta.citation];
        return;
      case "input_json_delta":
        if (block !== undefined && tracksToolInput(block)) this.json.set(event.index, (this.json.get(event.index) ?? "") + delta.partial_json);
        return;
      case "thinking_delta":
        if (block?.type === "thinking") block.thinking += delta.thinking;
        return;
      case "signature_delta":
        if (block?.type === "thinking") block.signature = delta.signature;
        return;
    }
  }

  /** A tool block's input from its streamed JSON, once the block ends (an empty stream: `{}`). */
  private settleInput(message: Anthropic.Message, index: number): void {
    const json = this.json.get(index);
    if (json === undefined) return;
    this.json.delete(index);
    const block = message.content.at(index);
    if (block !== undefined && tracksToolInput(block)) block.input = json ? partialParse(json) : {};
  }
}

function tracksToolInput(block: Block): block is Anthropic.ToolUseBlock | Anthropic.ServerToolUseBlock {
  return block.type === "tool_use" || block.type === "server_tool_use";
}

/** The stop and the usage, as the helper applies a message_delta: totals replace, never add. */
function applyDelta(message: Anthropic.Message, event: Anthropic.RawMessageDeltaEvent): void {
  const { delta, usage } = event;
  message.stop_reason = delta.stop_reason;
  message.stop_sequence = delta.stop_sequence;
  message.stop_details = delta.stop_details;
  message.usage.output_tokens = usage.output_tokens;
  if (delta.container != null) message.container = delta.container;
  if (usage.input_tokens != null) message.usage.input_tokens = usage.input_tokens;
  if (usage.cache_creation_input_tokens != null) message.usage.cache_creation_input_tokens = usage.cache_creation_input_tokens;
  if (usage.cache_read_input_tokens != null) message.usage.cache_read_input_tokens = usage.cache_read_input_tokens;
  if (usage.server_tool_use != null) message.usage.server_tool_use = usage.server_tool_use;
  if (usage.output_tokens_details != null) message.usage.output_tokens_details = usage.output_tokens_details;
}
