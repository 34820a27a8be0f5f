/** The HTTP API's JSON: every type renders, user.* round-trips, client input errors name JSON fields. */
import { RetryStatus, StopReasonType } from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import { newEvent } from "./event.js";
import { fromManagedAgentsParams } from "./json/from-json.js";
import { toManagedAgentsJson } from "./json/to-json.js";
import { EVENT_TYPES } from "./registry.js";
import { storedEvent } from "./testing/fixtures.js";
import { invalidField } from "./testing/errors.js";

const SERVER_FIELDS = new Set(["processed_at", "seq", "session_id"]);

/** What a client would send back: the object without the fields the server adds. */
function asParams(json: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(json).filter(([key]) => !SERVER_FIELDS.has(key)));
}

describe("toManagedAgentsJson", () => {
  it("renders every type with the envelope, as plain JSON", () => {
    for (const type of EVENT_TYPES) {
      const event = storedEvent(type);
      const json = toManagedAgentsJson(event);
      expect(json).toMatchObject({
        id: event.id,
        type,
        processed_at: "2025-06-01T12:00:00.000Z",
        seq: 7,
        session_id: "sesn_01JZ8Q3Z",
      });
      expect(JSON.parse(JSON.stringify(json))).toEqual(json);
    }
  });

  it("round-trips every user.* type through the client params", () => {
    for (const type of EVENT_TYPES.filter((t) => t.startsWith("user."))) {
      const event = storedEvent(type);
      const back = fromManagedAgentsParams(asParams(toManagedAgentsJson(event)));
      expect(back).toEqual({ ...event, sessionId: "", seq: 0, createdAt: undefined });
    }
  });

  it("spells enums and nested objects as Managed Agents does", () => {
    const body = (type: (typeof EVENT_TYPES)[number]): Record<string, unknown> =>
      asParams(toManagedAgentsJson(storedEvent(type)));
    expect(body("agent.tool_use")).toEqual({
      id: "sevt_01JZ8Q5A0000000000000000AB",
      type: "agent.tool_use",
      name: "bash",
      input: { command: "ls -la", options: { timeout_ms: 5000, env: ["A=1"] } },
      evaluated_permission: "ask",
      sandbox_id: "sbx_01JZ8Q4D3M",
    });
    expect(body("user.tool_confirmation")).toMatchObject({ result: "deny", deny_message: "Not on the production database." });
    expect(body("session.status_idle")).toMatchObject({
      stop_reason: { type: "requires_action", event_ids: ["sevt_01JZ8Q4D3M5X6V7B8N9P0R1S2T"] },
      stop_details: null,
    });
    expect(body("session.error")).toMatchObject({
      error: { type: "model_overloaded_error", message: "Overloaded", retry_status: { type: "retrying" } },
    });
    expect(body("span.model_request_end")).toMatchObject({
      is_error: false,
      model_usage: { input_tokens: 1200, output_tokens: 85, cache_creation_input_tokens: 0, cache_read_input_tokens: 1024 },
    });
    expect(body("sandbox.provisioned")).toMatchObject({ sandbox_id: "sbx_01JZ8Q4D3M", driver: "bubblewrap", duration_ms: 412 });
    expect(Object.keys(body("agent.thinking"))).toEqual(["id", "type"]);
  });

  it("renders each stop reason and retry status", () => {
    const idle = (type: StopReasonType): unknown =>
      toManagedAgentsJson(newEvent("session.status_idle", { stopReason: { type, eventIds: [] } }));
    expect(idle(StopReasonType.STOP_REASON_TYPE_END_TURN)).toMatchObject({ stop_reason: { type: "end_turn" } });
    expect(idle(StopReasonType.STOP_REASON_TYPE_BUDGET_REACHED)).toMatchObject({ stop_reason: { type: "budget_reached" } });
    expect(idle(StopReasonType.STOP_REASON_TYPE_INTERRUPTED)).toMatchObject({ stop_reason: { type: "interrupted" } });
    expect(idle(StopReasonType.STOP_REASON_TYPE_REFUSAL)).toMatchObject({ stop_reason: { type: "refusal" } });
    const error = (retryStatus: RetryStatus, type = "unknown_error", repositoryUrl = ""): Record<string, unknown> =>
      toManagedAgentsJson(newEvent("session.error", { error: { type, message: "m", retryStatus, repositoryUrl } }));
    expect(error(RetryStatus.RETRY_STATUS_TERMINAL)).toMatchObject({ error: { retry_status: { type: "terminal" } } });
    expect(error(RetryStatus.RETRY_STATUS_EXHAUSTED)).toMatchObject({ error: { retry_status: { type: "exhausted" } } });
    // Only the repository errors carry repository_url, null when unknown, as the SDK types them.
    expect(error(RetryStatus.RETRY_STATUS_EXHAUSTED)["error"]).not.toHaveProperty("repository_url");
    const url = "https://git.example.com/org/app.git";
    expect(error(RetryStatus.RETRY_STATUS_RETRYING, "repository_not_found_error", url)).toMatchObject({
      error: { type: "repository_not_found_error", repository_url: url, retry_status: { type: "retrying" } },
    });
    expect(error(RetryStatus.RETRY_STATUS_RETRYING, "repository_clone_error")).toMatchObject({ error: { repository_url: null } });
  });

  it("shows an unstored event with processed_at null, and refuses one without payload", () => {
    expect(toManagedAgentsJson(newEvent("user.interrupt", {})).processed_at).toBeNull();
    expect(() => toManagedAgentsJson({ ...newEvent("user.interrupt", {}), payload: undefined })).toThrow(/no known payload/);
  });
});

describe("fromManagedAgentsParams", () => {
  const field = (json: unknown, prefix?: string): string | undefined =>
    invalidField(() => fromManagedAgentsParams(json, prefix));

  it("parses the SDK's params, with an optional client id", () => {
    const event = fromManagedAgentsParams({ type: "user.message", content: [{ type: "text", text: "hi" }] });
    expect(event).toMatchObject({ id: "", type: "user.message", payload: { $case: "userMessage" } });
    expect(fromManagedAgentsParams({ type: "user.interrupt", id: "retry-1", session_thread_id: null }).id).toBe("retry-1");
    const result = fromManagedAgentsParams({ type: "user.custom_tool_result", custom_tool_use_id: "sevt_1", is_error: null });
    expect(result.payload).toEqual({
      $case: "userCustomToolResult",
      value: { customToolUseId: "sevt_1", content: [], isError: false },
    });
  });

  it("names the JSON field at fault", () => {
    expect(field("nope")).toBe("events[0]");
    expect(field({})).toBe("events[0].type");
    expect(field({ type: "agent.message", content: [] })).toBe("events[0].type");
    expect(field({ type: "user.message" }, "events[2]")).toBe("events[2].content");
    expect(field({ type: "user.message", content: [] })).toBe("events[0].content");
    expect(field({ type: "user.message", content: [{ type: "text", text: "" }] })).toBe("events[0].content[0].text");
    expect(field({ type: "user.message", content: [{ type: "text" }] })).toBe("events[0].content[0].text");
    expect(field({ type: "user.message", content: [{ type: "video" }] })).toBe("events[0].content[0].type");
    expect(field({ type: "user.message", content: [{ type: "image", source: { type: "base64", data: "AA==" } }] })).toBe(
      "events[0].content[0].source.media_type",
    );
    expect(field({ type: "user.message", content: [{ type: "image", source: { type: "text", data: "x" } }] })).toBe(
      "events[0].content[0].source.type",
    );
    expect(field({ type: "user.message", content: [{ type: "text", text: "a", cache: 1 }] })).toBe(
      "events[0].content[0].cache",
    );
    expect(field({ type: "user.message", content: "hi" })).toBe("events[0].content");
    expect(field({ type: "user.message", id: "a b", content: [{ type: "text", text: "a" }] })).toBe("events[0].id");
    expect(field({ type: "user.interrupt", session_thread_id: "sthr_1" })).toBe("events[0].session_thread_id");
    expect(field({ type: "user.tool_confirmation", tool_use_id: "t", result: "maybe" })).toBe("events[0].result");
    expect(field({ type: "user.tool_confirmation", tool_use_id: "t", result: "allow", deny_message: "no" })).toBe(
      "events[0].deny_message",
    );
    expect(field({ type: "user.tool_confirmation", result: "allow" })).toBe("events[0].tool_use_id");
    expect(field({ type: "user.tool_result", tool_use_id: "t", is_error: "yes" })).toBe("events[0].is_error");
    expect(field({ type: "user.tool_result", tool_use_id: "t", content: [{ type: "redacted" }] })).toBe(
      "events[0].content[0]",
    );
    const search = (extra: object) => ({
      type: "user.custom_tool_result",
      custom_tool_use_id: "t",
      content: [{ type: "search_result", source: "https://x.example", title: "X", content: [{ type: "text", text: "x" }], ...extra }],
    });
    // citations may be left out: not citable
    expect(fromManagedAgentsParams(search({})).payload).toMatchObject({
      value: { content: [{ block: { $case: "searchResult", value: { title: "X", citationsEnabled: false } } }] },
    });
    expect(field(search({ citations: { enabled: "yes" } }))).toBe("events[0].content[0].citations.enabled");
    expect(field(search({ content: [] }))).toBe("events[0].content[0].search_result.content");
    expect(field(search({ content: [{ type: "image" }] }))).toBe("events[0].content[0].content[0].type");
    expect(field(search({ content: [{ type: "text", text: "" }] }))).toBe("events[0].content[0].search_result.content[0].text");
    expect(field(search({ title: "" }))).toBe("events[0].content[0].search_result.title");
    expect(field(search({ cache_control: { type: "ephemeral" } }))).toBe("events[0].content[0].cache_control");
    // A search result is a tool's output, not something a user says.
    expect(field({ type: "user.message", content: search({}).content })).toBe("events[0].content[0]");
  });
});
