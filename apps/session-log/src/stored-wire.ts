/**
 * Responses that carry events as stored, without re-encoding them. The log stores each event as
 * the encoded Event it serves (mh_append appends the seq), so GetEvents, EmitEvent, EmitEvents,
 * WatchEvents and AcquireLease responses are written by framing those bytes as the message's field 1 (`events` or `event`)
 * and encoding only the rest, instead of grpc-js encoding every event object again (for a
 * 100-event slice that was most of the service's CPU outside Postgres). The response objects stay
 * true messages for anyone reading them in-process; only their serializer knows the bytes.
 */
import {
  AcquireLeaseResponse,
  EmitEventResponse,
  EmitEventsResponse,
  Event,
  GetEventsResponse,
  SessionLogService,
  WatchEventsResponse,
  type Lease,
  type Session,
} from "@metaharness/proto";

/** Responses made here, and the encoded events that are their field 1. */
const storedBodies = new WeakMap<object, readonly Uint8Array[]>();

/** A GetEventsResponse carrying `bodies` (encoded Events, in order) as they are. */
export function storedGetEventsResponse(bodies: readonly Uint8Array[], lastSeq: number, hasMore: boolean): GetEventsResponse {
  const response = { lastSeq, hasMore } as GetEventsResponse;
  Object.defineProperty(response, "events", { enumerable: true, get: () => bodies.map((b) => Event.decode(b)) });
  storedBodies.set(response, bodies);
  return response;
}

/** An EmitEventResponse for `event`, whose encoding (as stored) is `body`. */
export function storedEmitEventResponse(event: Event, body: Uint8Array, duplicate: boolean): EmitEventResponse {
  const response: EmitEventResponse = { event, duplicate };
  storedBodies.set(response, [body]);
  return response;
}

/** An EmitEventsResponse for `events`, whose encodings (as stored) are `bodies`. */
export function storedEmitEventsResponse(events: Event[], bodies: readonly Uint8Array[], duplicates: number, leaseLeftMs: number): EmitEventsResponse {
  const response: EmitEventsResponse = { events, duplicates, leaseLeftMs };
  storedBodies.set(response, bodies);
  return response;
}

/** An AcquireLeaseResponse carrying `bodies` (the session's events as stored, in order) as they are. */
export function storedAcquireLeaseResponse(lease: Lease, session: Session, bodies: readonly Uint8Array[]): AcquireLeaseResponse {
  const response = { lease, session } as AcquireLeaseResponse;
  Object.defineProperty(response, "events", { enumerable: true, get: () => bodies.map((b) => Event.decode(b)) });
  storedBodies.set(response, bodies);
  return response;
}

/** A WatchEventsResponse carrying `event`, whose encoding (as stored) is `body`. */
export function storedWatchEventResponse(event: Event, body: Uint8Array): WatchEventsResponse {
  const response: WatchEventsResponse = { event, delta: undefined, deltas: [] };
  storedBodies.set(response, [body]);
  return response;
}

/** `encode` for responses not made here; `rest` encodes everything but the events' field (`field`, 1 unless said). */
function framed<T extends object>(encode: (value: T) => Uint8Array, rest: (value: T) => Uint8Array, field = 1): (value: T) => Buffer {
  return (value) => {
    const bodies = storedBodies.get(value);
    return bodies === undefined ? Buffer.from(encode(value)) : frame(bodies, rest(value), field);
  };
}

export const serializeGetEventsResponse = framed<GetEventsResponse>(
  (v) => GetEventsResponse.encode(v).finish(),
  (v) => GetEventsResponse.encode({ events: [], lastSeq: v.lastSeq, hasMore: v.hasMore }).finish(),
);
export const serializeEmitEventResponse = framed<EmitEventResponse>(
  (v) => EmitEventResponse.encode(v).finish(),
  (v) => EmitEventResponse.encode({ event: undefined, duplicate: v.duplicate }).finish(),
);
export const serializeEmitEventsResponse = framed<EmitEventsResponse>(
  (v) => EmitEventsResponse.encode(v).finish(),
  (v) => EmitEventsResponse.encode({ events: [], duplicates: v.duplicates, leaseLeftMs: v.leaseLeftMs }).finish(),
);

export const serializeWatchEventsResponse = framed<WatchEventsResponse>(
  (v) => WatchEventsResponse.encode(v).finish(),
  () => new Uint8Array(0),
);

export const serializeAcquireLeaseResponse = framed<AcquireLeaseResponse>(
  (v) => AcquireLeaseResponse.encode(v).finish(),
  (v) => AcquireLeaseResponse.encode({ lease: v.lease, session: v.session, events: [] }).finish(),
  3,
);

/** The SessionLog service definition, with the responses above serialized from stored bytes. */
export const sessionLogDefinition = {
  ...SessionLogService,
  getEvents: { ...SessionLogService.getEvents, responseSerialize: serializeGetEventsResponse },
  emitEvent: { ...SessionLogService.emitEvent, responseSerialize: serializeEmitEventResponse },
  emitEvents: { ...SessionLogService.emitEvents, responseSerialize: serializeEmitEventsResponse },
  watchEvents: { ...SessionLogService.watchEvents, responseSerialize: serializeWatchEventsResponse },
  acquireLease: { ...SessionLogService.acquireLease, responseSerialize: serializeAcquireLeaseResponse },
} as const;

/** Each body as `field` (length-delimited), then `tail`. */
function frame(bodies: readonly Uint8Array[], tail: Uint8Array, field: number): Buffer {
  const tag = (field << 3) | 2;
  let size = tail.length;
  for (const b of bodies) size += 1 + varintSize(b.length) + b.length;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const b of bodies) {
    out[at++] = tag;
    at = writeVarint(out, at, b.length);
    out.set(b, at);
    at += b.length;
  }
  out.set(tail, at);
  return out;
}

/** `body` followed by field 3 (seq, varint): the event as stored once its seq is known. */
export function withSeq(body: Uint8Array, seq: number): Buffer {
  const out = Buffer.allocUnsafe(body.length + 1 + varintSize(seq));
  out.set(body, 0);
  out[body.length] = 0x18;
  writeVarint(out, body.length + 1, seq);
  return out;
}

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    size += 1;
  }
  return size;
}

function writeVarint(out: Buffer, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  out[at++] = n;
  return at;
}
