/**
 * One streaming attempt through the SDK: routes each content event to the caller's hooks,
 * measures time to the first content delta, and reports whether any output reached the hooks
 * before a failure (which decides whether a retry is safe). An exception thrown by a hook is the
 * caller's own: it aborts the stream and propagates unchanged, never retried.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { toModelError } from "./classify.js";
import type { ModelError } from "./model-error.js";
import type { StreamHooks } from "./types.js";

export type AttemptOutcome =
  | { readonly ok: true; readonly message: Anthropic.Message; readonly ttftMs: number }
  | { readonly ok: false; readonly error: ModelError; readonly delivered: boolean };

/** Wraps an exception from a hook so it is not mistaken for a model failure. */
class HookFailure extends Error {
  constructor(readonly error: unknown) {
    super("a stream hook threw");
  }
}

export async function runAttempt(
  client: Anthropic,
  body: Anthropic.MessageCreateParamsStreaming,
  hooks: StreamHooks,
  timeoutMs: number,
): Promise<AttemptOutcome> {
  const started = performance.now();
  let firstDeltaAt: number | undefined;
  let delivered = false;
  const deliver = (call: () => void): void => {
    delivered = true;
    try {
      call();
    } catch (err) {
      throw new HookFailure(err);
    }
  };
  const stream = client.messages.stream(body, { timeout: timeoutMs, ...(hooks.signal ? { signal: hooks.signal } : {}) });
  try {
    for await (const event of stream) {
      if (event.type === "content_block_start" && event.content_block.type === "tool_use") {
        const { id, name } = event.content_block;
        if (hooks.onToolUseStart) deliver(() => hooks.onToolUseStart?.(id, name, event.index));
      } else if (event.type === "content_block_delta") {
        firstDeltaAt ??= performance.now();
        const { delta, index } = event;
        if (delta.type === "text_delta" && hooks.onTextDelta) deliver(() => hooks.onTextDelta?.(delta.text, index));
        if (delta.type === "thinking_delta" && hooks.onThinkingDelta) deliver(() => hooks.onThinkingDelta?.(delta.thinking, index));
        if (delta.type === "input_json_delta" && hooks.onInputJsonDelta) {
          deliver(() => hooks.onInputJsonDelta?.(delta.partial_json, index));
        }
      }
    }
    // The iterator can end quietly when an error lands between two events; finalMessage rejects then.
    const message = await stream.finalMessage();
    return { ok: true, message, ttftMs: (firstDeltaAt ?? performance.now()) - started };
  } catch (err) {
    if (err instanceof HookFailure) throw err.error;
    return { ok: false, error: toModelError(err, hooks.signal), delivered };
  }
}
