import { newEvent } from "@metaharness/events";
import type { Event } from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import { TenantBook } from "./tenant-usage.js";

const inSession = (sessionId: string, e: Event, id = e.id): Event => ({ ...e, sessionId, id });
const end = (input: number, output: number): Event =>
  newEvent("span.model_request_end", {
    modelRequestStartId: "evt_s",
    isError: false,
    stopReason: "end_turn",
    modelUsage: { inputTokens: input, outputTokens: output, cacheCreationInputTokens: 1, cacheReadInputTokens: 2 },
  });
const bash = newEvent("agent.tool_use", { name: "bash", input: {}, evaluatedPermission: 0, sandboxId: "" });
const result = (toolUseId: string, isError: boolean): Event => newEvent("agent.tool_result", { toolUseId, content: [], isError });

describe("TenantBook", () => {
  it("sums usage per tenant and each tool's calls, results and errors across its sessions", () => {
    const book = new TenantBook();
    const changed = [
      book.count("acme", inSession("sesn_1", end(10, 3))),
      book.count("acme", inSession("sesn_1", bash, "call_1")),
      book.count("acme", inSession("sesn_1", result("call_1", false))),
      book.count("acme", inSession("sesn_2", bash, "call_1")),
      book.count("acme", inSession("sesn_2", newEvent("agent.message", { content: [] }))),
      book.count("acme", inSession("sesn_2", result("call_1", true))),
      book.count("acme", inSession("sesn_2", newEvent("agent.mcp_tool_use", { mcpServerName: "docs", name: "search", input: {}, evaluatedPermission: 0 }), "call_2")),
      book.count("acme", inSession("sesn_2", newEvent("agent.mcp_tool_result", { mcpToolUseId: "call_2", content: [], isError: true }))),
      book.count("acme", inSession("sesn_2", newEvent("user.custom_tool_result", { customToolUseId: "never_seen", content: [], isError: false }))),
      book.count("acme", inSession("sesn_2", newEvent("session.status_terminated", {}))),
      book.count("", inSession("sesn_3", end(1, 1))),
    ];
    // The agent's text changes no figure of a session already seen.
    expect(changed.map((c) => c !== undefined)).toEqual([true, true, true, true, false, true, true, true, true, true, true]);
    expect(changed[9]).toEqual({
      tenant: "acme",
      sessions: 2,
      sessions_terminated: 1,
      model_requests: 1,
      input_tokens: 10,
      output_tokens: 3,
      cache_creation_input_tokens: 1,
      cache_read_input_tokens: 2,
      tools: {
        bash: { calls: 2, results: 2, errors: 1, error_rate: 0.5 },
        "docs/search": { calls: 1, results: 1, errors: 1, error_rate: 1 },
        unknown: { calls: 0, results: 1, errors: 0, error_rate: 0 },
      },
    });
    expect(changed[10]).toMatchObject({ tenant: "", sessions: 1, model_requests: 1, tools: {} });
  });
});
