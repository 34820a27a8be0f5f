/**
 * The session page's view of events: trace ids from traceparents, thinking text.
 */
import { newEvent, toManagedAgentsJson } from "@metaharness/events";
import { describe, expect, it } from "vitest";
import { parseTraceparent, toUiEventJson } from "./events.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN = "00f067aa0ba902b7";

describe("parseTraceparent", () => {
  it("reads the trace and span of a W3C traceparent", () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN });
    expect(parseTraceparent(` 00-${TRACE.toUpperCase()}-${SPAN}-00 `)).toEqual({ traceId: TRACE, spanId: SPAN });
  });

  it("has nothing for an absent, malformed or all-zero one", () => {
    for (const bad of [undefined, "", "garbage", `00-${TRACE}-${SPAN}`, `00-${"0".repeat(32)}-${SPAN}-01`, `00-${TRACE}-${"0".repeat(16)}-01`, `00-${TRACE.slice(1)}-${SPAN}-01`]) {
      expect(parseTraceparent(bad)).toBeUndefined();
    }
  });
});

describe("toUiEventJson", () => {
  it("is the API's event object plus its trace", () => {
    const event = { ...newEvent("session.status_running", {}, { traceContext: { traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: "" } }), seq: 3, createdAt: new Date() };
    expect(toUiEventJson(event)).toEqual({ ...toManagedAgentsJson(event), trace_id: TRACE, span_id: SPAN });
  });

  it("leaves the trace out when the writer was not traced", () => {
    const event = { ...newEvent("session.status_running", {}), seq: 1, createdAt: new Date() };
    expect(toUiEventJson(event)).toEqual(toManagedAgentsJson(event));
  });

  it("shows the thinking text, never the signature", () => {
    const event = { ...newEvent("agent.thinking", { thinking: "check the migrations first", signature: "sig-secret" }), seq: 2, createdAt: new Date() };
    const json = toUiEventJson(event);
    expect(json.thinking).toBe("check the migrations first");
    expect(JSON.stringify(json)).not.toContain("sig-secret");
  });
});
