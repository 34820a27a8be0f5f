import { newEvent } from "@metaharness/events";
import { StopReasonType } from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import { countEvent, emptyUsage } from "./usage.js";

describe("countEvent", () => {
  it("sums the model's usage, counts tool calls of every kind, and follows the status", () => {
    const usage = emptyUsage("sesn_a");
    const end = (input: number, output: number) =>
      newEvent("span.model_request_end", {
        modelRequestStartId: "evt_s",
        isError: false,
        stopReason: "end_turn",
        modelUsage: { inputTokens: input, outputTokens: output, cacheCreationInputTokens: 0, cacheReadInputTokens: 2 },
      });
    const events = [
      newEvent("session.status_running", {}),
      end(10, 3),
      newEvent("agent.tool_use", { name: "bash", input: {}, evaluatedPermission: 0, sandboxId: "" }),
      newEvent("agent.message", { content: [] }),
      end(5, 1),
      newEvent("session.status_idle", { stopReason: { type: StopReasonType.STOP_REASON_TYPE_END_TURN, eventIds: [] } }),
    ];
    const changed = events.map((e, i) => countEvent(usage, { ...e, seq: i + 1 }));
    // The agent's text changes no figure.
    expect(changed).toEqual([true, true, true, false, true, true]);
    expect(usage).toEqual({
      session_id: "sesn_a",
      seq: 6,
      model_requests: 2,
      input_tokens: 15,
      output_tokens: 4,
      cache_read_input_tokens: 4,
      tool_calls: 1,
      status: "idle",
    });
  });
});
