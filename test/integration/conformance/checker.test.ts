/**
 * The conformance checker (test/conformance/) can fail: each kind of violation it exists for is
 * found in a value that has it, and a value exactly in the SDK's shape passes. What the served
 * events looked like before they were made the SDK's (seq, session_id, sandbox.* types, the stop
 * reason "interrupted", a toolu_ id) is refused.
 */
import { describe, expect, it } from "vitest";
import { judge, operationsOf } from "../../conformance/conform.js";
import { SdkTypes } from "../../conformance/sdk-types.js";

const types = new SdkTypes();
const AT = "2026-01-01T00:00:00Z";
const idle = { id: "sevt_01JZ8Q4D3M5X6V7B8N9P0R1S2T", type: "session.status_idle", processed_at: AT, stop_reason: { type: "end_turn" }, stop_details: null };
const EVENT = "BetaManagedAgentsSessionEvent";

describe("the SDK's types as a checker", () => {
  it("passes a value in the declared shape", () => {
    expect(types.check(idle, EVENT)).toEqual([]);
    expect(types.check({ id: "sevt_1", type: "agent.message", processed_at: AT, content: [{ type: "text", text: "hi" }] }, EVENT)).toEqual([]);
  });

  it("finds a missing required field, an unknown field, an unknown enum value and type, a wrong kind and an id prefix", () => {
    const { stop_details: _, ...noDetails } = idle;
    expect(types.check(noDetails, EVENT)).toEqual([expect.stringMatching(/^\$\.stop_details: missing/)]);
    expect(types.check({ ...idle, seq: 4 }, EVENT)).toEqual([expect.stringMatching(/^\$\.seq: not declared/)]);
    expect(types.check({ ...idle, stop_reason: { type: "interrupted" } }, EVENT)).toEqual([expect.stringMatching(/^\$\.stop_reason\.type: "interrupted" is not one of/)]);
    expect(types.check({ id: "sevt_2", type: "sandbox.provisioned", processed_at: AT }, EVENT)).toEqual([expect.stringMatching(/^\$\.type: "sandbox\.provisioned" is not one of/)]);
    expect(types.check({ ...idle, processed_at: 5 }, EVENT)).toEqual([expect.stringMatching(/^\$\.processed_at: 5 is not a string/)]);
    expect(types.check({ ...idle, id: "toolu_01" }, EVENT)).toEqual([expect.stringMatching(/^\$\.id: "toolu_01" does not start with sevt_/)]);
    expect(types.check({}, "NoSuchType")).toEqual([expect.stringMatching(/declares no type NoSuchType/)]);
  });

  it("takes any string where the SDK lists known values with `| (string & {})`, and nothing else there", () => {
    expect(types.check("claude-sonnet-5-5", "BetaManagedAgentsModel")).toEqual([]);
    expect(types.check("claude-offline-long", "BetaManagedAgentsModel")).toEqual([]);
    expect(types.check(5, "BetaManagedAgentsModel")).not.toEqual([]);
  });

  it("judges records by the route the gateway's OpenAPI names, pages and streams included", () => {
    const ops = operationsOf({
      paths: {
        "/v1/sessions/{session_id}/events": { get: { responses: { "200": { description: "PageCursor<BetaManagedAgentsSessionEvent>" } } } },
        "/v1/sessions/{session_id}/events/stream": {
          get: { responses: { "200": { description: "BetaManagedAgentsStreamSessionEvents", content: { "text/event-stream": {} } } } },
        },
        "/v1/ours": { get: { "x-meta-harness-extension": true, responses: { "200": { description: "Ours" } } } },
      },
    });
    const page = { method: "GET", path: "/v1/sessions/sesn_1/events", status: 200 };
    expect(judge(types, ops, { ...page, body: { data: [idle], next_page: null } })).toEqual([]);
    expect(judge(types, ops, { ...page, body: { data: [{ ...idle, session_id: "sesn_1" }], next_page: null, total: 1 } })).toEqual([
      "$.total: not a page's field",
      expect.stringMatching(/^\$\.data\[0\]\.session_id: not declared/),
    ]);
    const sse = { method: "GET", path: "/v1/sessions/sesn_1/events/stream", status: 200 };
    expect(judge(types, ops, { ...sse, sse: { event: "session.status_idle", data: idle } })).toEqual([]);
    expect(judge(types, ops, { ...sse, sse: { event: "x", data: idle } })).toEqual([expect.stringMatching(/^event: x but data\.type/)]);
    // Not the SDK's to judge: errors, our routes, answers read with our extensions.
    expect(judge(types, ops, { ...page, status: 400, body: {} })).toBeUndefined();
    expect(judge(types, ops, { method: "GET", path: "/v1/ours", status: 200, body: {} })).toBeUndefined();
    expect(judge(types, ops, { ...page, extensions: true, body: { data: [{ ...idle, seq: 1 }], next_page: null } })).toBeUndefined();
  });
});
