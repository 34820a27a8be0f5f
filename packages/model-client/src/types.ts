/**
 * The shapes of one `streamMessage` call: the request (the SDK's create params, with model and
 * max_tokens optional), the hooks that receive output as it streams, and the result.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { ModelError } from "./model-error.js";

export type StreamParams = Omit<Anthropic.MessageCreateParamsStreaming, "model" | "max_tokens" | "stream"> & {
  readonly model?: Anthropic.Model;
  readonly max_tokens?: number;
};

export interface RetryInfo {
  /** The attempt that failed (1-based); the next one is `attempt + 1`. */
  readonly attempt: number;
  readonly delayMs: number;
  readonly error: ModelError;
}

export interface DiscardInfo {
  /** The attempt whose delivered output must be thrown away. */
  readonly attempt: number;
  readonly error: ModelError;
}

export interface StreamHooks {
  /** Aborting cancels the HTTP stream (or the wait before a retry) at once: CANCELLED. */
  readonly signal?: AbortSignal;
  onTextDelta?(text: string, blockIndex: number): void;
  onThinkingDelta?(text: string, blockIndex: number): void;
  onToolUseStart?(id: string, name: string, blockIndex: number): void;
  onInputJsonDelta?(partialJson: string, blockIndex: number): void;
  /** Called before waiting `delayMs` to retry; the harness reports it as retry_status "retrying". */
  onRetry?(info: RetryInfo): void;
  /**
   * Opts in to retrying after output was already delivered: an attempt can fail mid-stream
   * (overloaded) after some deltas reached the hooks above. With this hook, streamMessage calls
   * it, and the caller drops everything it got from that attempt, before the next attempt streams
   * the answer again from its start. Without it, such a failure is not retried: the ModelError
   * (partialOutput: true) goes to the caller, who owns the half-delivered output.
   */
  onAttemptDiscarded?(info: DiscardInfo): void;
}

export interface StreamResult {
  readonly message: Anthropic.Message;
  /** From the start of the successful attempt to its first content delta (to its end if none). */
  readonly ttftMs: number;
  /** Attempts made, the successful one included. */
  readonly attempts: number;
}
