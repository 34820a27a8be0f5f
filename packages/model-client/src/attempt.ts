/**
 * One streaming attempt through the SDK: routes each content event to the caller's hooks,
 * measures time to the first content delta, and reports whether any output reached the hooks
 * before a failure (which decides whether a retry is safe). An exception thrown by a hook is the
 * caller's own: it aborts the stream and propagates unchanged, never retried. The request is
 * `messages.create({ stream: true })` read event by event, the message accumulated here
 * (accumulate.ts), not the stream helper; what the stream throws is made what the helper makes
 * of it (`streamFailure`), so a failure is classified as before.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { APIUserAbortError, AnthropicError } from "@anthropic-ai/sdk";
import { MessageAccumulator } from "./accumulate.js";
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
  headers?: Record<string, string>,
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
  const accumulator = new MessageAccumulator();
  try {
    const stream = await client.messages.create(body, { timeout: timeoutMs, ...(headers ? { headers } : {}), ...(hooks.signal ? { signal: hooks.signal } : {}) });
    try {
      for await (const event of stream) {
        accumulator.add(event);
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
    } catch (err) {
      if (err instanceof HookFailure) throw err;
      throw streamFailure(err);
    }
    // The stream ends quietly when its request is aborted.
    if (stream.controller.signal.aborted) throw new APIUserAbortError();
    return { ok: true, message: accumulator.result(), ttftMs: (firstDeltaAt ?? performance.now()) - started };
  } catch (err) {
    if (err instanceof HookFailure) throw err.error;
    return { ok: false, error: toModelError(err, hooks.signal), delivered };
  }
}

/**
 * What the stream helper made of an error that ended its read: an abort is the caller's, an
 * AnthropicError stays as it is, anything else (undici's "terminated" of a body cut off) becomes
 * an AnthropicError with its message, the original as its cause.
 */
function streamFailure(err: unknown): unknown {
  if (err instanceof Error && err.name === "AbortError") return new APIUserAbortError();
  if (err instanceof AnthropicError) return err;
  if (err instanceof Error) return new AnthropicError(err.message, { cause: err });
  return new AnthropicError(String(err));
}
