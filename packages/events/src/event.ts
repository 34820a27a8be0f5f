/**
 * Typed construction and access of events, so callers name a type string and get the matching
 * payload type instead of juggling ts-proto's `{ $case, value }` union by hand.
 */
import type { Event, TraceContext } from "@metaharness/proto";
import { newEventId } from "./ids.js";
import { payloadCaseForType, typeForPayloadCase, type EventType, type PayloadOf } from "./registry.js";

export interface NewEventInit {
  /** The idempotency key; a fresh "sevt_..." when absent, so a retry must reuse the event. */
  readonly id?: string;
  readonly sessionId?: string;
  readonly traceContext?: TraceContext;
}

/** An event of `type` with `payload`, ready to append (seq and created_at are the log's). */
export function newEvent<T extends EventType>(type: T, payload: PayloadOf<T>, init: NewEventInit = {}): Event {
  return {
    id: init.id ?? newEventId(),
    sessionId: init.sessionId ?? "",
    seq: 0,
    type,
    createdAt: undefined,
    traceContext: init.traceContext,
    // TypeScript cannot correlate the $case computed from T with PayloadOf<T>; the registry can.
    payload: { $case: payloadCaseForType(type), value: payload } as Event["payload"],
  };
}

/** The type named by the event's payload (not its `type` string), or undefined without one. */
export function eventTypeOf(event: Event): EventType | undefined {
  return event.payload === undefined ? undefined : typeForPayloadCase(event.payload.$case as string);
}

/** The payload when the event carries a payload of `type`, else undefined. */
export function payloadOf<T extends EventType>(event: Event, type: T): PayloadOf<T> | undefined {
  const payload = event.payload;
  if (payload === undefined || payload.$case !== payloadCaseForType(type)) return undefined;
  return payload.value as PayloadOf<T>;
}
