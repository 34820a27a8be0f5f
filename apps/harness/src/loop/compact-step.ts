/**
 * The loop's side of compaction: asking the model for a summary (the strategy itself does no
 * I/O), counted like any other request; counting compactions in a row; recognizing the API's
 * "prompt is too long" 400 (which gets one forced compaction and one retry, never a
 * retries_exhausted loop); and the events that end a turn at the compaction limit (the SDK's
 * compaction_limit_reached_error, then idle with retries_exhausted, as its .d.ts describes).
 */
import type { ModelClient } from "@metaharness/model-client";
import { ModelError } from "@metaharness/model-client";
import { newEvent } from "@metaharness/events";
import { RetryStatus, StopReasonType, type Event } from "@metaharness/proto";
import type { StreamParams } from "@metaharness/model-client";
import { withSpan } from "@metaharness/telemetry";
import type { SummaryAnswer } from "../context/compaction.js";
import { idle, sessionError } from "./turn-events.js";
import { usageAttributes, type TurnMeter } from "./turn-meter.js";

/** The real API's wording (the offline model's too): "prompt is too long: N tokens > M maximum". */
const TOO_LONG = /prompt is too long/i;

export function isPromptTooLong(err: unknown): boolean {
  return err instanceof ModelError && err.status === 400 && TOO_LONG.test(err.message);
}

/** The window the model stated ("... > 200000 maximum"), if the message says it. */
export function statedMaximum(err: unknown): number | undefined {
  const m = err instanceof Error ? /> (\d+) maximum/.exec(err.message) : null;
  return m === null ? undefined : Number(m[1]);
}

/** Compactions since the model last produced a message or a tool call (or the turn began). */
export function compactionsInARow(events: readonly Event[]): number {
  let n = 0;
  for (let i = events.length - 1; i >= 0; i--) {
    const c = events[i]?.payload?.$case;
    if (c === "agentThreadContextCompacted") n++;
    if (c === "agentMessage" || c === "agentToolUse" || c === "agentMcpToolUse" || c === "agentCustomToolUse" || c === "sessionStatusIdle") break;
  }
  return n;
}

/**
 * A compaction's summary request, counted like any other model request: a span of its own with
 * its tokens and the model metrics (its usage is also on the compaction event, which the
 * session's usage and token budget count).
 */
export function summarize(model: ModelClient, params: StreamParams, signal: AbortSignal, meter: TurnMeter, sessionId: string): Promise<SummaryAnswer> {
  const attributes = { "gen_ai.operation.name": "chat", "gen_ai.request.model": params.model ?? model.model, "mh.session_id": sessionId };
  return withSpan("harness.compaction_summary", attributes, async (span) => {
    const began = Date.now();
    const { message, ttftMs } = await model.streamMessage(params, { signal });
    meter.modelRequest(Date.now() - began, { ttftMs, usage: message.usage });
    span.setAttributes(usageAttributes(message.usage));
    const text = message.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n");
    const u = message.usage;
    return {
      text,
      usage: {
        inputTokens: u.input_tokens,
        outputTokens: u.output_tokens,
        cacheCreationInputTokens: u.cache_creation_input_tokens ?? 0,
        cacheReadInputTokens: u.cache_read_input_tokens ?? 0,
      },
    };
  });
}

/** Why a turn ends at the compaction limit: compactions in a row, or a model that still refuses. */
export type CompactionLimit = { readonly inARow: number } | "still-too-long";

/** The request span's end and the events that end the turn at the limit. */
export function compactionLimitEvents(startId: string, limit: CompactionLimit): Event[] {
  const message =
    limit === "still-too-long"
      ? "the model still said the prompt is too long after the context was compacted to the maximum it stated; the turn ends"
      : `the context was compacted ${limit.inARow} times in a row without the model producing a message or a tool call; the turn ends`;
  return [
    newEvent("span.model_request_end", { modelRequestStartId: startId, isError: true, modelUsage: undefined, stopReason: "" }),
    sessionError("compaction_limit_reached_error", message, RetryStatus.RETRY_STATUS_EXHAUSTED),
    idle(StopReasonType.STOP_REASON_TYPE_RETRIES_EXHAUSTED),
  ];
}
