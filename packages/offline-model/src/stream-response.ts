/**
 * Renders a planned message as the Messages API's event stream: message_start and a ping at once,
 * then from `ttftMs` each block's content_block_start, its paced deltas (text_delta,
 * thinking_delta + signature_delta, input_json_delta starting with an empty partial_json as the
 * real API does), content_block_stop; then message_delta with the stop reason and final usage, and
 * message_stop. A midstream failure sends an `error` event after a few deltas instead of finishing.
 */
import { errorBody } from "./api-error.js";
import { Pacer, chunk } from "./pacing.js";
import { CHARS_PER_TOKEN, estimateTokens } from "./segments.js";
import type { SseWriter } from "./sse-writer.js";
import type { ContentBlock, ContentDelta, Message } from "./wire.js";

/** Deltas carry a few tokens each, like the real API's. */
export const TOKENS_PER_CHUNK = 3;
/** A midstream failure comes after this many content deltas (or at the end of shorter content). */
export const MIDSTREAM_FAILURE_AFTER_DELTAS = 3;

export interface StreamOptions {
  readonly ttftMs: number;
  readonly tokensPerSecond: number;
  readonly signal: AbortSignal;
  readonly requestId: string;
  /** When set, the stream fails with an SSE `error` event of this message. */
  readonly midstreamOverloaded?: string;
  /** Called as the first content delta is written: the model's own time to first token ends. */
  readonly onFirstDelta?: () => void;
}

export type StreamOutcome = "completed" | "midstream_error" | "aborted";

interface PacedDelta {
  readonly delta: ContentDelta;
  readonly tokens: number;
}

function* deltasOf(block: ContentBlock): Generator<PacedDelta> {
  const size = TOKENS_PER_CHUNK * CHARS_PER_TOKEN;
  switch (block.type) {
    case "text":
      for (const text of chunk(block.text, size)) yield { delta: { type: "text_delta", text }, tokens: estimateTokens(text.length) };
      return;
    case "thinking":
      for (const thinking of chunk(block.thinking, size)) {
        yield { delta: { type: "thinking_delta", thinking }, tokens: estimateTokens(thinking.length) };
      }
      yield { delta: { type: "signature_delta", signature: block.signature }, tokens: 0 };
      return;
    case "tool_use":
      yield { delta: { type: "input_json_delta", partial_json: "" }, tokens: 0 };
      for (const partial_json of chunk(JSON.stringify(block.input), size)) {
        yield { delta: { type: "input_json_delta", partial_json }, tokens: estimateTokens(partial_json.length) };
      }
  }
}

/** The block as content_block_start announces it: empty, to be filled by deltas. */
function emptied(block: ContentBlock): ContentBlock {
  switch (block.type) {
    case "text":
      return { ...block, text: "" };
    case "thinking":
      return { ...block, thinking: "", signature: "" };
    case "tool_use":
      return { ...block, input: {} };
  }
}

export async function streamMessage(out: SseWriter, message: Message, opts: StreamOptions): Promise<StreamOutcome> {
  const pacer = new Pacer(opts.ttftMs, opts.tokensPerSecond, opts.signal);
  const { usage } = message;
  await out.send({
    type: "message_start",
    message: {
      ...message,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1, output_tokens_details: null },
    },
  });
  await out.send({ type: "ping" });
  let contentDeltas = 0;
  const failNow = async (): Promise<StreamOutcome> => {
    await out.send(errorBody("overloaded_error", opts.midstreamOverloaded ?? "Overloaded", opts.requestId));
    return "midstream_error";
  };

  // An empty answer still takes its time to first token.
  if (message.content.length === 0 && !(await pacer.take(0))) return "aborted";
  for (const [index, block] of message.content.entries()) {
    let started = false;
    for (const { delta, tokens } of deltasOf(block)) {
      if (!(await pacer.take(tokens))) return "aborted";
      if (!started) {
        await out.send({ type: "content_block_start", index, content_block: emptied(block) });
        started = true;
      }
      await out.send({ type: "content_block_delta", index, delta });
      if (contentDeltas === 0 && tokens > 0) opts.onFirstDelta?.();
      if (tokens > 0) contentDeltas++;
      if (opts.midstreamOverloaded !== undefined && contentDeltas >= MIDSTREAM_FAILURE_AFTER_DELTAS) return failNow();
    }
    await out.send({ type: "content_block_stop", index });
  }
  if (opts.midstreamOverloaded !== undefined) return failNow();
  if (opts.signal.aborted) return "aborted";
  await out.send({
    type: "message_delta",
    delta: { stop_reason: message.stop_reason ?? "end_turn", stop_sequence: message.stop_sequence, stop_details: null, container: null },
    usage: {
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
      cache_creation_input_tokens: usage.cache_creation_input_tokens,
      cache_read_input_tokens: usage.cache_read_input_tokens,
      output_tokens_details: usage.output_tokens_details,
      server_tool_use: null,
    },
  });
  await out.send({ type: "message_stop" });
  return "completed";
}
