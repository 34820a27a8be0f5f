/**
 * A request to the HTTP API is one trace: the gateway's SERVER span continues the caller's
 * `traceparent` (the official SDK sends its own span's), and the session log's and harness's
 * spans for the calls it makes hang under it,
 * as do the events it appends (an audit found the gateway made no span at all: each of its calls
 * began a trace of its own, eighteen for one session's turn). A client's mistake is recorded as
 * its status, not as an error.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { defineScenario } from "@metaharness/offline-model";
import { currentSpanIds, SpanStatusCode, withSpan, type ReadableSpan } from "@metaharness/telemetry";
import { startTestTelemetry, type TestTelemetry } from "@metaharness/telemetry/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_A, startStack, type Stack } from "../../support/gateway.js";

let tel: TestTelemetry;
let stack: Stack;
let sdk: Anthropic;

beforeAll(async () => {
  tel = startTestTelemetry("gateway-traces-test");
  stack = await startStack({ scenarios: [defineScenario("hello", [{ text: "Hello." }], { onExhausted: "repeat-last" })], vault: false });
  sdk = stack.client().sdk;
});
afterAll(async () => {
  await stack?.stop();
  await tel?.telemetry.shutdown();
});

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";
const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;

describe("a request to the HTTP API", () => {
  it("is one trace: the gateway's span under the caller's, the backends' spans and the events under the gateway's", async () => {
    const agent = await sdk.beta.agents.create({ name: "traced", model: "claude-sonnet-5-5", system: "[scenario:hello]" });
    const environment = await sdk.beta.environments.create({ name: "traced" });
    // The SDK makes a span of its own for each request, under the active one, and sends it.
    const { traceId, session } = await withSpan("caller", {}, async () => {
      const made = await sdk.beta.sessions.create({ agent: agent.id, environment_id: environment.id });
      await sdk.beta.sessions.events.send(made.id, { events: [{ type: "user.message", content: [{ type: "text", text: "hi" }] }] });
      return { traceId: currentSpanIds()!.traceId, session: made };
    });

    const inTrace = (): ReadableSpan[] => tel.finishedSpans().filter((s) => s.spanContext().traceId === traceId);
    await expect.poll(() => inTrace().filter((s) => s.name === "POST /v1/sessions/:session_id/events").length, { timeout: 30_000 }).toBe(1);
    const ids = new Set(inTrace().map((s) => s.spanContext().spanId));
    const gateway = inTrace().filter((s) => s.name.startsWith("POST /v1/sessions"));
    expect(gateway.map((s) => [s.name, ids.has(parentOf(s) ?? ""), s.attributes["http.response.status_code"]])).toEqual([
      ["POST /v1/sessions", true, 200],
      ["POST /v1/sessions/:session_id/events", true, 200],
    ]);
    const [create, send] = gateway.map((s) => s.spanContext().spanId);
    const logSpans = inTrace().filter((s) => s.name.startsWith("metaharness.v1.SessionLog/"));
    expect(logSpans.find((s) => s.name === "metaharness.v1.SessionLog/CreateSession" && parentOf(s) === create)).toBeDefined();
    const appends = logSpans.filter((s) => s.name === "metaharness.v1.SessionLog/EmitEvents" && parentOf(s) === send);
    expect(appends).toHaveLength(1);
    expect(inTrace().find((s) => s.name === "metaharness.v1.Harness/Wake" && parentOf(s) === send)).toBeDefined();

    // The event it appended names that append's span, in the caller's trace.
    const stored = (await stack.brain.log.client.getEvents({ sessionId: session.id, limit: 100, types: [], position: undefined })).events.find(
      (e) => e.type === "user.message",
    );
    expect(stored?.traceContext?.traceparent).toBe(`00-${traceId}-${appends[0]!.spanContext().spanId}-01`);
  });

  it("continues a traceparent header, and records a client's mistake as its status, not as an error", async () => {
    const res = await fetch(`${stack.gateway.url}/v1/sessions/sesn_missing`, {
      headers: { "x-api-key": KEY_A, "anthropic-version": "2023-06-01", traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
    });
    expect(res.status).toBe(404);
    const named = (): ReadableSpan | undefined => tel.finishedSpans().find((s) => s.name === "GET /v1/sessions/:session_id" && s.spanContext().traceId === TRACE_ID);
    await expect.poll(named).toBeDefined();
    const span = named()!;
    expect(parentOf(span)).toBe(CALLER_SPAN);
    expect(span.attributes["http.response.status_code"]).toBe(404);
    expect(span.status.code).not.toBe(SpanStatusCode.ERROR);
  });

  it("is a span even when refused before its handler runs: no key, a body its schema refuses, an unknown route", async () => {
    const cases: Array<{ n: number; path: string; init: { method: string; headers: Record<string, string>; body?: string }; name: string; status: number }> = [
      { n: 1, path: "/v1/agents", init: { method: "GET", headers: {} }, name: "GET /v1/agents", status: 401 },
      { n: 2, path: "/v1/sessions/sesn_x/events", init: { method: "POST", headers: { "x-api-key": KEY_A, "content-type": "application/json" }, body: '{"events":5}' }, name: "POST /v1/sessions/:session_id/events", status: 400 },
      { n: 3, path: "/v1/no-such-route", init: { method: "GET", headers: { "x-api-key": KEY_A } }, name: "GET (no route)", status: 404 },
    ];
    for (const c of cases) {
      const traceId = `${TRACE_ID.slice(0, 31)}${c.n}`;
      const res = await fetch(`${stack.gateway.url}${c.path}`, {
        ...c.init,
        headers: { ...c.init.headers, "anthropic-version": "2023-06-01", traceparent: `00-${traceId}-${CALLER_SPAN}-01` },
      });
      expect(res.status, c.path).toBe(c.status);
      await expect.poll(() => tel.finishedSpans().find((s) => s.spanContext().traceId === traceId)).toBeDefined();
      const found = tel.finishedSpans().find((s) => s.spanContext().traceId === traceId)!;
      expect(found.name, c.path).toBe(c.name);
      expect(found.attributes["http.response.status_code"], c.path).toBe(c.status);
      expect(parentOf(found), c.path).toBe(CALLER_SPAN);
    }
    const refused = tel.finishedSpans().find((s) => s.spanContext().traceId === `${TRACE_ID.slice(0, 31)}2`)!;
    expect(refused.attributes["mh.session_id"]).toBe("sesn_x");
  });
});
