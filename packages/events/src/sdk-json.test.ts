/**
 * The served form of events (json/sdk.ts): the SDK's shapes by default, our additions only when
 * asked for, and ids that are `sevt_` ids unique to their session, with the fields that name
 * other events following them.
 */
import { RetryStatus, StopReasonType, type ErrorObject, type Event } from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import { newEvent } from "./event.js";
import { publicEventId, toSdkEventJson } from "./json/sdk.js";
import { EVENT_TYPES } from "./registry.js";
import { storedEvent } from "./testing/fixtures.js";

const PLAIN = { extensions: false };
const EXT = { extensions: true };
const stored = (e: Event, sessionId = "sesn_A", seq = 3): Event => ({ ...e, sessionId, seq, createdAt: new Date("2026-01-01T00:00:00Z") });

describe("publicEventId", () => {
  it("keeps a generated sevt_ id and turns any other into a sevt_ id unique to the session", () => {
    expect(publicEventId("sesn_A", "sevt_01JZ8Q5A0000000000000000AB")).toBe("sevt_01JZ8Q5A0000000000000000AB");
    const a = publicEventId("sesn_A", "toolu_01");
    expect(a).toMatch(/^sevt_[0-9a-z]{26}$/);
    expect(publicEventId("sesn_A", "toolu_01")).toBe(a);
    expect(publicEventId("sesn_B", "toolu_01")).not.toBe(a);
    expect(publicEventId("sesn_A", "toolu_02")).not.toBe(a);
  });
});

describe("toSdkEventJson", () => {
  it("serves no additions by default, and them all when asked", () => {
    for (const type of EVENT_TYPES) {
      const plain = toSdkEventJson(storedEvent(type), PLAIN);
      const ext = toSdkEventJson(storedEvent(type), EXT);
      expect(ext, type).toMatchObject({ seq: 7, session_id: "sesn_01JZ8Q3Z", type });
      if (type.startsWith("sandbox.")) {
        expect(plain, type).toBeUndefined();
        continue;
      }
      expect(plain, type).not.toHaveProperty("seq");
      expect(plain, type).not.toHaveProperty("session_id");
    }
    expect(toSdkEventJson(storedEvent("agent.tool_use"), PLAIN)).not.toHaveProperty("sandbox_id");
    expect(toSdkEventJson(storedEvent("span.model_request_start"), PLAIN)).not.toHaveProperty("model");
    expect(toSdkEventJson(storedEvent("span.model_request_end"), PLAIN)).not.toHaveProperty("stop_reason");
  });

  it("maps an interrupted turn to end_turn and our error types to unknown_error", () => {
    const idle = storedEvent("session.status_idle", { stopReason: { type: StopReasonType.STOP_REASON_TYPE_INTERRUPTED, eventIds: [] } });
    expect(toSdkEventJson(idle, PLAIN)?.["stop_reason"]).toEqual({ type: "end_turn" });
    expect(toSdkEventJson(idle, EXT)?.["stop_reason"]).toEqual({ type: "interrupted" });
    const error: ErrorObject = { type: "external_agent_exited", message: "code 3", retryStatus: RetryStatus.RETRY_STATUS_EXHAUSTED, repositoryUrl: "" };
    const failed = storedEvent("session.error", { error });
    expect(toSdkEventJson(failed, PLAIN)?.["error"]).toEqual({ type: "unknown_error", message: "external_agent_exited: code 3", retry_status: { type: "exhausted" } });
    expect(toSdkEventJson(failed, EXT)?.["error"]).toMatchObject({ type: "external_agent_exited" });
  });

  it("serves tool uses and what names them under the same sevt_ ids, different in two sessions", () => {
    const use = newEvent("agent.custom_tool_use", { name: "w", input: {} }, { id: "toolu_X" });
    const answer = newEvent("user.custom_tool_result", { customToolUseId: "toolu_X", content: [], isError: false }, { id: "toolu_X.result" });
    const idle = newEvent("session.status_idle", { stopReason: { type: StopReasonType.STOP_REASON_TYPE_REQUIRES_ACTION, eventIds: ["toolu_X"] } });
    const inA = [use, answer, idle].map((e) => toSdkEventJson(stored(e, "sesn_A"), PLAIN)!);
    const inB = [use, answer, idle].map((e) => toSdkEventJson(stored(e, "sesn_B"), PLAIN)!);
    const [useA, answerA, idleA] = inA;
    expect(useA!.id).toMatch(/^sevt_/);
    expect(answerA!.id).toMatch(/^sevt_/);
    expect(answerA!["custom_tool_use_id"]).toBe(useA!.id);
    expect(idleA!["stop_reason"]).toEqual({ type: "requires_action", event_ids: [useA!.id] });
    expect(inB[0]!.id).not.toBe(useA!.id);
  });
});
