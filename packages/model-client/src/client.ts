/**
 * createModelClient: the model behind one interface for the harness. Streaming always; retries
 * are ours (the SDK's are off, maxRetries 0) so each one is visible through onRetry: 429, 529,
 * 5xx, network failures and overloaded errors mid-stream are retried with capped exponential
 * backoff and full jitter, honouring retry-after up to the cap; other errors fail at once. An
 * attempt whose output already reached the hooks is retried only if the caller can discard that
 * output (onAttemptDiscarded; see StreamHooks).
 */
import Anthropic from "@anthropic-ai/sdk";
import { runAttempt } from "./attempt.js";
import { retryDelayMs, sleep } from "./backoff.js";
import { cancelled } from "./model-error.js";
import { withDefaults, type ModelClientOptions } from "./options.js";
import type { StreamHooks, StreamParams, StreamResult } from "./types.js";

export interface ModelClient {
  /** The default model of requests that name none. */
  readonly model: string;
  /** Streams one assistant message; rejects with a ModelError (or what a hook threw). */
  streamMessage(params: StreamParams, hooks?: StreamHooks): Promise<StreamResult>;
}

export function createModelClient(options: ModelClientOptions): ModelClient {
  const opts = withDefaults(options);
  const sdk = new Anthropic({
    apiKey: opts.apiKey,
    maxRetries: 0,
    timeout: opts.timeoutMs,
    defaultHeaders: { ...opts.defaultHeaders },
    ...(opts.baseURL === undefined ? {} : { baseURL: opts.baseURL }),
  });

  async function streamMessage(params: StreamParams, hooks: StreamHooks = {}): Promise<StreamResult> {
    const { signal } = hooks;
    const body: Anthropic.MessageCreateParamsStreaming = {
      ...params,
      model: params.model ?? opts.model,
      max_tokens: params.max_tokens ?? opts.maxTokens,
      stream: true,
    };
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted === true) throw cancelled(signal.reason);
      const outcome = await runAttempt(sdk, body, hooks, opts.timeoutMs);
      if (outcome.ok) return { message: outcome.message, ttftMs: outcome.ttftMs, attempts: attempt };
      const { error, delivered } = outcome;
      const canDiscard = !delivered || hooks.onAttemptDiscarded !== undefined;
      if (!error.retryable || attempt >= opts.retry.maxAttempts || !canDiscard) {
        throw error.withOutcome({ attempts: attempt, partialOutput: delivered });
      }
      if (delivered) hooks.onAttemptDiscarded?.({ attempt, error });
      const delayMs = retryDelayMs(attempt, opts.retry, error.retryAfterMs, opts.random);
      hooks.onRetry?.({ attempt, delayMs, error });
      if (!(await sleep(delayMs, signal))) throw cancelled(signal?.reason);
    }
  }

  return { model: opts.model, streamMessage };
}
