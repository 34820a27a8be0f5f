/**
 * Events as the session page reads them: the API's event object (toManagedAgentsJson), plus
 * what the HTTP view leaves out and a person debugging needs: the trace the event was written
 * in (from its W3C `traceparent`), and the text of `agent.thinking`, which the Managed Agents
 * view serves as a progress signal only. The signature of a thinking block stays in the log.
 */
import { toManagedAgentsJson } from "@metaharness/events";
import type { Event } from "@metaharness/proto";
import type { UiEventJson } from "./browser/wire.js";

// version "-" trace-id "-" parent-id "-" flags; an all-zero trace or span id is invalid.
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}/;

/** The trace and span of a W3C traceparent, or undefined when it is absent or invalid. */
export function parseTraceparent(traceparent: string | undefined): { traceId: string; spanId: string } | undefined {
  const match = TRACEPARENT.exec(traceparent?.trim().toLowerCase() ?? "");
  const [, traceId, spanId] = match ?? [];
  if (traceId === undefined || spanId === undefined || /^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId };
}

export function toUiEventJson(event: Event): UiEventJson {
  const json: UiEventJson = toManagedAgentsJson(event);
  const trace = parseTraceparent(event.traceContext?.traceparent);
  if (trace !== undefined) {
    json.trace_id = trace.traceId;
    json.span_id = trace.spanId;
  }
  if (event.payload?.$case === "agentThinking" && event.payload.value.thinking !== "") json.thinking = event.payload.value.thinking;
  return json;
}
