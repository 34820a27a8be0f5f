/**
 * A turn as a trace: each harness step is a span; the session log's server spans for that step's
 * appends are its children (trace context in gRPC metadata); the events it appended carry its
 * trace id, so a person can go from any event to the work that produced it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScenario } from "@metaharness/offline-model";
import { StopReasonType } from "@metaharness/proto";
import { SpanStatusCode } from "@metaharness/telemetry";
import { startTestTelemetry, type TestTelemetry } from "@metaharness/telemetry/testing";
import { idleReason, startBrain, type Brain } from "../../support/harness.js";
import { userMessage } from "../../support/events.js";

let brain: Brain;
let tel: TestTelemetry;
beforeAll(async () => {
  tel = startTestTelemetry("traces-test");
  brain = await startBrain({
    scenarios: [
      defineScenario("hi", [{ text: "traced answer" }]),
      defineScenario("tool", [{ toolUses: [{ name: "bash", input: { command: "exit 3" } }] }, { text: "done" }]),
    ],
  });
});
afterAll(async () => {
  await brain?.stop();
  await tel?.telemetry.shutdown();
});

describe("traces", () => {
  it("link a harness step, the log's spans for its appends, and the events it wrote", async () => {
    const sessionId = await brain.createSession();
    await brain.log.client.emitEvent({ sessionId, event: userMessage("[scenario:hi] hi") });
    await brain.rpc.wake({ sessionId });
    const events = await brain.waitFor(sessionId, (e) => idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN);

    // The step's span ends once its last append returns to the harness, which may be a moment
    // after the test reads that event from the log.
    const isStep = (s: ReturnType<TestTelemetry["finishedSpans"]>[number]): boolean =>
      s.name === "harness.call-model" && s.attributes["mh.session_id"] === sessionId;
    await expect.poll(() => tel.finishedSpans().some(isStep), { timeout: 30_000 }).toBe(true);
    const spans = tel.finishedSpans();
    const step = spans.find(isStep);
    expect(step!.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
    // Its usage reads as the SDK's span of the request (its child) reads: input counts the cache's.
    const request = spans.find((s) => s.parentSpanContext?.spanId === step!.spanContext().spanId && s.name.startsWith("anthropic."));
    expect(request, "the SDK's span of the model request").toBeDefined();
    for (const key of ["gen_ai.usage.input_tokens", "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.output_tokens"]) {
      expect(step!.attributes[key], key).toBe(request!.attributes[key]);
    }
    const traceId = step!.spanContext().traceId;
    const appends = spans.filter((s) => s.spanContext().traceId === traceId && s.name === "metaharness.v1.SessionLog/EmitEvents");
    expect(appends.length).toBeGreaterThanOrEqual(2);
    const answer = events.find((e) => e.type === "agent.message")!;
    expect(answer.traceContext?.traceparent).toContain(traceId);
  });

  it("give a span only to a step with something to do: none to the settled step after a turn's idle", async () => {
    const sessionId = await brain.createSession();
    await brain.log.client.emitEvent({ sessionId, event: userMessage("[scenario:hi] hi") });
    await brain.rpc.wake({ sessionId });
    await brain.waitFor(sessionId, (e) => idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN);
    // The loop decides its next step (done: the log ends with the turn's idle) before it lingers,
    // and returns once the linger runs out: every step it took is behind it then.
    const supervisor = brain.harnesses[0]!.supervisor;
    await expect.poll(() => supervisor.list().some((s) => s.sessionId === sessionId), { timeout: 30_000 }).toBe(false);
    const steps = tel.finishedSpans().filter((s) => s.name.startsWith("harness.") && s.attributes["mh.session_id"] === sessionId);
    expect(steps.map((s) => s.name)).toEqual(["harness.call-model"]);
  });

  it("mark the step whose model request failed as an error, with the error's type", async () => {
    const sessionId = await brain.createSession();
    await brain.log.client.emitEvent({ sessionId, event: userMessage("[scenario:no-such-scenario] hi") });
    await brain.rpc.wake({ sessionId });
    await brain.waitFor(sessionId, (e) => idleReason(e) === StopReasonType.STOP_REASON_TYPE_RETRIES_EXHAUSTED);
    const isStep = (s: ReturnType<TestTelemetry["finishedSpans"]>[number]): boolean =>
      s.name === "harness.call-model" && s.attributes["mh.session_id"] === sessionId;
    await expect.poll(() => tel.finishedSpans().some(isStep), { timeout: 30_000 }).toBe(true);
    const step = tel.finishedSpans().find(isStep)!;
    expect(step.status).toMatchObject({ code: SpanStatusCode.ERROR });
    expect(step.status.message).toContain('unknown offline scenario "no-such-scenario"');
    expect(step.attributes["error.type"]).toBe("model_request_failed_error");
  });

  it("record nothing of the orphan sweeper's polls (four a second), while its server spans exist for others", async () => {
    // A fixed wait on purpose: a quiet period in which the sweeper polls a few times.
    await new Promise((r) => setTimeout(r, 600));
    const names = tel.finishedSpans().map((s) => s.name);
    expect(names).toContain("metaharness.v1.SessionLog/EmitEvents");
    expect(names.filter((n) => n === "metaharness.v1.SessionLog/ListSessions")).toEqual([]);
  });

  it("make each tool call a span, an error when the call failed", async () => {
    const sessionId = await brain.createSession();
    await brain.log.client.emitEvent({ sessionId, event: userMessage("[scenario:tool] run it") });
    await brain.rpc.wake({ sessionId });
    const events = await brain.waitFor(sessionId, (e) => idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN);
    const use = events.find((e) => e.type === "agent.tool_use")!;
    const result = events.find((e) => e.type === "agent.tool_result");
    const isCall = (s: ReturnType<TestTelemetry["finishedSpans"]>[number]): boolean => s.attributes["gen_ai.tool.call.id"] === use.id;
    await expect.poll(() => tel.finishedSpans().some(isCall), { timeout: 30_000 }).toBe(true);
    const call = tel.finishedSpans().find(isCall)!;
    expect(call.name).toBe("execute_tool bash");
    expect(call.attributes["gen_ai.tool.name"]).toBe("bash");
    const failed = result?.payload?.$case === "agentToolResult" && result.payload.value.isError;
    expect(failed).toBe(true);
    expect(call.status.code).toBe(SpanStatusCode.ERROR);
    expect(call.attributes["error.type"]).toBe("tool_error");
  });
});
