/**
 * GetEvents on the wire without re-encoding: events are stored as the encoded Event they are
 * served as, so a GetEventsResponse is written by framing the stored bodies as its repeated
 * field 1 and appending last_seq and has_more, instead of decoding every body into objects for
 * grpc-js to encode again (the largest share of a slice's time outside Postgres). The response
 * object stays a true GetEventsResponse: its `events` decode the bodies when read in-process.
 */
import { Event, GetEventsResponse, SessionLogService } from "@metaharness/proto";

const storedBodies = new WeakMap<GetEventsResponse, readonly Uint8Array[]>();

/** A GetEventsResponse carrying `bodies` (encoded Events, in order) as they are. */
export function storedGetEventsResponse(bodies: readonly Uint8Array[], lastSeq: number, hasMore: boolean): GetEventsResponse {
  const response = { lastSeq, hasMore } as GetEventsResponse;
  Object.defineProperty(response, "events", { enumerable: true, get: () => bodies.map((b) => Event.decode(b)) });
  storedBodies.set(response, bodies);
  return response;
}

/** `repeated Event events = 1` framed around the stored bodies, then the rest of the message. */
export function serializeGetEventsResponse(response: GetEventsResponse): Buffer {
  const bodies = storedBodies.get(response);
  if (bodies === undefined) return Buffer.from(GetEventsResponse.encode(response).finish());
  const tail = GetEventsResponse.encode({ events: [], lastSeq: response.lastSeq, hasMore: response.hasMore }).finish();
  let size = tail.length;
  for (const b of bodies) size += 1 + varintSize(b.length) + b.length;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const b of bodies) {
    out[at++] = 0x0a; // field 1, length-delimited
    at = writeVarint(out, at, b.length);
    out.set(b, at);
    at += b.length;
  }
  out.set(tail, at);
  return out;
}

/** The SessionLog service definition, with GetEvents responses serialized as above. */
export const sessionLogDefinition = {
  ...SessionLogService,
  getEvents: { ...SessionLogService.getEvents, responseSerialize: serializeGetEventsResponse },
} as const;

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
    out[at++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 0x80);
  }
  out[at++] = n;
  return at;
}
