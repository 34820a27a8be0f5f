/**
 * Token previews and usage folding, which the integration tests see only end to end.
 */
import { newEvent, publicEventId } from "@metaharness/events";
import { DeltaKind, type EventDelta } from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import { foldEvent } from "../sessions/usage.js";
import { NO_USAGE } from "../sessions/store.js";
import { Previews, previewEventId } from "./previews.js";

const delta = (kind: DeltaKind, text: string, blockIndex = 0): EventDelta => ({
  sessionId: "sesn_1",
  modelRequestId: "sevt_req",
  blockIndex,
  kind,
  text,
  emittedAt: undefined,
});

describe("Previews", () => {
  it("starts a message preview once, then sends its fragments; thinking is start-only", () => {
    const previews = new Previews(new Set(["agent.message", "agent.thinking"] as const), "sesn_1");
    // Served as the stored event will be: under its public id, a sevt_ id unique to the session.
    const id = publicEventId("sesn_1", previewEventId("sevt_req", 1));
    expect(id).toMatch(/^sevt_[0-9a-z]{26}$/);
    expect(previews.frames(delta(DeltaKind.DELTA_KIND_TEXT, "Hel", 1))).toEqual([
      { type: "event_start", event: { id, type: "agent.message" } },
      { type: "event_delta", event_id: id, delta: { type: "content_delta", content: { type: "text", text: "Hel" }, index: 0 } },
    ]);
    expect(previews.frames(delta(DeltaKind.DELTA_KIND_TEXT, "lo", 1))).toHaveLength(1);
    expect(previews.frames(delta(DeltaKind.DELTA_KIND_THINKING, "hmm", 0))).toEqual([
      { type: "event_start", event: { id: publicEventId("sesn_1", previewEventId("sevt_req", 0)), type: "agent.thinking" } },
    ]);
    expect(previews.frames(delta(DeltaKind.DELTA_KIND_THINKING, "more", 0))).toEqual([]);
    expect(previews.frames(delta(DeltaKind.DELTA_KIND_INPUT_JSON, "{"))).toEqual([]);
  });

  it("sends only the kinds asked for, and forgets a request's previews when it ends", () => {
    const previews = new Previews(new Set(["agent.message"] as const), "sesn_1");
    expect(previews.frames(delta(DeltaKind.DELTA_KIND_THINKING, "hmm"))).toEqual([]);
    previews.frames(delta(DeltaKind.DELTA_KIND_TEXT, "a"));
    previews.settle(newEvent("span.model_request_end", { modelRequestStartId: "sevt_req", isError: true, modelUsage: undefined, stopReason: "" }));
    expect(previews.frames(delta(DeltaKind.DELTA_KIND_TEXT, "b"))[0]?.type).toBe("event_start");
  });
});

describe("foldEvent", () => {
  it("adds up usage and active time", () => {
    const at = (ms: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, ms));
    const withTime = <T extends ReturnType<typeof newEvent>>(e: T, ms: number): T => ({ ...e, createdAt: at(ms) });
    let state = NO_USAGE;
    state = foldEvent(state, withTime(newEvent("session.status_running", {}), 0));
    state = foldEvent(
      state,
      newEvent("span.model_request_end", {
        modelRequestStartId: "x",
        isError: false,
        modelUsage: { inputTokens: 10, outputTokens: 5, cacheCreationInputTokens: 3, cacheReadInputTokens: 7 },
        stopReason: "end_turn",
      }),
    );
    state = foldEvent(state, withTime(newEvent("session.status_idle", { stopReason: undefined }), 1500));
    expect(state).toMatchObject({ inputTokens: 10, outputTokens: 5, cacheCreationInputTokens: 3, cacheReadInputTokens: 7, activeMs: 1500, runningSince: null });
  });

  it("counts a compaction's summary request like any other model request", () => {
    const compacted = newEvent("agent.thread_context_compacted", {
      throughSeq: 9,
      summary: "s",
      clearedThroughSeq: 9,
      tokensBefore: 900,
      tokensAfter: 100,
      summaryUsage: { inputTokens: 20, outputTokens: 4, cacheCreationInputTokens: 1, cacheReadInputTokens: 30 },
    });
    expect(foldEvent(NO_USAGE, compacted)).toMatchObject({ inputTokens: 20, outputTokens: 4, cacheCreationInputTokens: 1, cacheReadInputTokens: 30 });
  });
});
