/**
 * A turn's trace as a person finds it in Jaeger: the session log, the harness and the offline model
 * run in-process with OpenTelemetry exporting over OTLP/HTTP to the real Jaeger (infra/jaeger), and
 * the trace is read back through Jaeger's query API, the one its UI uses. The harness step
 * `harness.call-model` must hold the session log's `EmitEvents` server spans as children, and the
 * events that step appended must name its trace, so a person can go from an event to its trace.
 *
 * Without a running Jaeger the test is skipped with the reason, unless MH_REQUIRE_JAEGER=1.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScenario } from "@metaharness/offline-model";
import { StopReasonType } from "@metaharness/proto";
import type { Telemetry } from "@metaharness/telemetry";
import { idleReason, startBrain, type Brain } from "../../support/harness.js";
import { userMessage } from "../../support/events.js";
import {
  childrenOf,
  exportToJaeger,
  findTraces,
  getTrace,
  jaegerSkipReason,
  serviceOf,
  tagOf,
  traceUrl,
  waitForTraces,
} from "../../support/jaeger.js";

const EMIT_EVENTS = "metaharness.v1.SessionLog/EmitEvents";
const CALL_MODEL = "harness.call-model";

// One process, one tracer provider: the log and the harness report under this one service name,
// unique per run so that nothing else in Jaeger's memory can match.
const serviceName = `mh-traces-test-${randomBytes(4).toString("hex")}`;

let unavailable: string | undefined;
let telemetry: Telemetry | undefined;
let brain: Brain | undefined;

beforeAll(async () => {
  unavailable = await jaegerSkipReason();
  if (unavailable !== undefined) return;
  telemetry = exportToJaeger(serviceName);
  brain = await startBrain({ scenarios: [defineScenario("hi", [{ text: "traced answer" }])] });
});

afterAll(async () => {
  await brain?.stop();
  await telemetry?.shutdown();
});

describe("traces in Jaeger", () => {
  it("show a harness step with the session log's appends as children, named by its events", async (ctx) => {
    if (unavailable !== undefined) ctx.skip(unavailable);
    const since = new Date();
    const sessionId = await brain!.createSession();
    await brain!.log.client.emitEvent({ sessionId, event: userMessage("[scenario:hi] hi") });
    await brain!.rpc.wake({ sessionId });
    const events = await brain!.waitFor(sessionId, (e) => idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN);

    // The step's span ends after its appends return, so by now every span of the turn has ended;
    // the batch processor exports them within its delay, or at the latest at shutdown.
    await telemetry!.shutdown();

    const [found] = await waitForTraces(
      () => findTraces({ service: serviceName, operation: CALL_MODEL, tags: { "mh.session_id": sessionId }, since }),
      (traces) => traces.length > 0,
    );
    // The search answers whole traces already; read it again by id as the UI's trace page does.
    const trace = await getTrace(found!.traceID);
    const step = trace.spans.find((s) => s.operationName === CALL_MODEL && tagOf(s, "mh.session_id") === sessionId);
    expect(step, `no ${CALL_MODEL} span for ${sessionId} in ${traceUrl(trace.traceID)}`).toBeDefined();
    expect(serviceOf(trace, step!)).toBe(serviceName);
    expect(Number(tagOf(step!, "gen_ai.usage.output_tokens"))).toBeGreaterThan(0);

    const appends = childrenOf(trace, step!).filter((s) => s.operationName === EMIT_EVENTS);
    expect(appends.length, `EmitEvents children of the step in ${traceUrl(trace.traceID)}`).toBeGreaterThanOrEqual(2);
    for (const span of appends) {
      expect(tagOf(span, "span.kind")).toBe("server");
      expect(span.traceID).toBe(trace.traceID);
    }

    const answer = events.find((e) => e.type === "agent.message");
    expect(answer?.traceContext?.traceparent).toMatch(new RegExp(`^00-${trace.traceID}-[0-9a-f]{16}-[0-9a-f]{2}$`));
  });
});
