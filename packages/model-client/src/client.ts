/**
 * createModelClient: the model behind one interface for the harness. Streaming always; retries
 * are ours (the SDK's are off, maxRetries 0) so each one is visible through onRetry: 429, 529,
 * 5xx, network failures and overloaded errors mid-stream are retried with capped exponential
 * backoff and full jitter, honouring retry-after up to the cap; other errors fail at once. An
 * attempt whose output already reached the hooks is retried only if the caller can discard that
 * output (onAttemptDiscarded; see StreamHooks). The SDK's own span of a request is made only while
 * spans are recorded (telemetry's recordsSpans): otherwise nothing would receive it, and the
 * request carries the active trace context in its `traceparent` itself. The SDK's requests go
 * through a lean fetch on node:http (node-fetch.ts) rather than Node's built-in fetch (undici).
 */
import Anthropic from "@anthropic-ai/sdk";
import { retry } from "@metaharness/errors";
import { injectIntoHeaders, recordsSpans } from "@metaharness/telemetry";
import { runAttempt } from "./attempt.js";
import { createNodeFetch } from "./node-fetch.js";
import { ModelError, cancelled } from "./model-error.js";
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
  const sdkOptions = {
    apiKey: opts.apiKey,
    maxRetries: 0,
    timeout: opts.timeoutMs,
    defaultHeaders: { ...opts.defaultHeaders },
    ...(opts.baseURL === undefined ? {} : { baseURL: opts.baseURL }),
    // The Messages API answers where it is asked, never with a redirect; a request that may not
    // follow one is sent as it is, where fetch otherwise copies each request (its body teed into
    // two new streams) in case it has to be sent again elsewhere. A redirect would fail the
    // attempt as a connection error.
    fetchOptions: { redirect: "error" as const },
    // undici's Request, header copies, dispatcher and body pipe cost more CPU a request than the
    // SDK's own work; the lean fetch keeps what the SDK relies on (see node-fetch.ts).
    fetch: createNodeFetch().fetch,
  };
  const traced = new Anthropic(sdkOptions);
  // The SDK's tracing (a span, its attributes, the headers built again to carry it: about 0.15 ms
  // of CPU a request) for a span that is not recorded.
  const untraced = new Anthropic({ ...sdkOptions, openTelemetry: { traces: false } });

  async function streamMessage(params: StreamParams, hooks: StreamHooks = {}): Promise<StreamResult> {
    const { signal } = hooks;
    const body: Anthropic.MessageCreateParamsStreaming = {
      ...params,
      model: params.model ?? opts.model,
      max_tokens: params.max_tokens ?? opts.maxTokens,
      stream: true,
    };
    // The failure of the attempt that last ran, and whether its output had reached the hooks.
    let last: { attempt: number; delivered: boolean; error?: ModelError } = { attempt: 0, delivered: false };
    try {
      return await retry(
        opts.retry,
        async ({ attempt }) => {
          const outcome = recordsSpans()
            ? await runAttempt(traced, body, hooks, opts.timeoutMs)
            : await runAttempt(untraced, body, hooks, opts.timeoutMs, injectIntoHeaders({}));
          if (outcome.ok) return { message: outcome.message, ttftMs: outcome.ttftMs, attempts: attempt };
          last = { attempt, delivered: outcome.delivered, error: outcome.error };
          throw outcome.error;
        },
        {
          signal,
          random: opts.random,
          isRetryable: (err) => err instanceof ModelError && err.retryable && (!last.delivered || hooks.onAttemptDiscarded !== undefined),
          retryAfterMs: (err) => (err instanceof ModelError ? err.retryAfterMs : undefined),
          onRetry: ({ attempt, delayMs, error }) => {
            const err = error as ModelError;
            if (last.delivered) hooks.onAttemptDiscarded?.({ attempt, error: err });
            hooks.onRetry?.({ attempt, delayMs, error: err });
          },
          onAbort: (reason) => cancelled(reason),
        },
      );
    } catch (err) {
      // An attempt's own failure says how far it got; a cancellation between attempts is plain.
      if (err === last.error && last.error !== undefined) throw last.error.withOutcome({ attempts: last.attempt, partialOutput: last.delivered });
      throw err;
    }
  }

  return { model: opts.model, streamMessage };
}
