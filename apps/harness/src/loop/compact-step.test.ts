/**
 * The loop's side of compaction: compactions in a row are counted since the model's last output,
 * and the API's "prompt is too long" 400 is recognized, with the window it states.
 */
import { newEvent } from "@metaharness/events";
import { ModelError } from "@metaharness/model-client";
import type { Event } from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import { compactionsInARow, isPromptTooLong, statedMaximum } from "./compact-step.js";

let seq = 0;
const at = (e: Event): Event => ({ ...e, seq: ++seq });
const said = (t: string) => at(newEvent("agent.message", { content: [{ block: { $case: "text" as const, value: { text: t } } }] }));

describe("compact-step", () => {
  it("counts compactions since the model's last output, and knows the API's too-long error", () => {
    const c = () => at(newEvent("agent.thread_context_compacted", { throughSeq: 1, summary: "s", clearedThroughSeq: 1, tokensBefore: 2, tokensAfter: 1, summaryUsage: undefined }));
    expect(compactionsInARow([said("x"), c(), c()])).toBe(2);
    expect(compactionsInARow([c(), said("x")])).toBe(0);
    const tooLong = new ModelError("FAILED_PRECONDITION", "model request failed with 400: prompt is too long: 5000 tokens > 4000 maximum", { errorType: "model_request_failed_error", status: 400 });
    expect(isPromptTooLong(tooLong)).toBe(true);
    expect(statedMaximum(tooLong)).toBe(4000);
    expect(isPromptTooLong(new ModelError("FAILED_PRECONDITION", "model request failed with 400: max_tokens: Field required", { errorType: "model_request_failed_error", status: 400 }))).toBe(false);
  });
});
