/**
 * The gate in front of the log: one function that every append passes through. It checks the
 * envelope and the payload, fills in what the writer may leave empty (type, id), and bounds the
 * encoded size, so the log stores only events it can serve and read back.
 */
import { Event } from "@metaharness/proto";
import { MeasuredSize, MhError, SizeLimit, invalidArgument } from "@metaharness/errors";
import { MAX_EVENT_ID_LENGTH, isValidEventId, newEventId } from "../ids.js";
import { isEventType, payloadFieldForType, typeForPayloadCase } from "../registry.js";
import { validatePayload } from "./payload.js";

/** The default bound on an event's encoded size: 1 MiB. */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;

export interface AppendValidationOptions {
  /** The most bytes the protobuf encoding of the whole event may take. */
  readonly maxPayloadBytes: number;
  /** Prefix of the field named in errors: "event" (default), "events[3]", ... */
  readonly field?: string;
}

/** An event that passed the gate, and its encoding. */
export interface ValidatedEvent {
  /** The normalized event: a new object, whose payload is still the caller's. */
  readonly event: Event;
  /**
   * `event` encoded when it was validated (the size bound is on these bytes): a snapshot, which
   * later changes to the caller's objects do not reach, and which the log stores without
   * encoding the event again.
   */
  readonly encoded: Uint8Array;
}

/**
 * Normalizes `event` for storing: `type` derived from the payload when empty, `id` a fresh
 * "sevt_..." when empty. `seq`, `created_at` and `session_id` are left as they are, for the log to
 * set. Throws MhError INVALID_ARGUMENT naming the offending field.
 */
export function validateEventForAppend(event: Event, options: AppendValidationOptions): ValidatedEvent {
  const { maxPayloadBytes } = options;
  if (!Number.isSafeInteger(maxPayloadBytes) || maxPayloadBytes <= 0) {
    throw new RangeError(`maxPayloadBytes must be a positive integer, not ${maxPayloadBytes}`);
  }
  const root = options.field ?? "event";

  if (event.type !== "" && !isEventType(event.type)) {
    throw invalidArgument(`${root}.type`, `unknown event type "${event.type}"`);
  }
  const payload = event.payload as Event["payload"] | null;
  if (payload === undefined || payload === null) {
    throw invalidArgument(`${root}.payload`, "is required: set the payload field that the type names");
  }
  const type = typeForPayloadCase(payload.$case as string);
  if (type === undefined || typeof payload.value !== "object" || payload.value === null) {
    throw invalidArgument(`${root}.payload`, `is not a known payload ($case "${String(payload.$case)}")`);
  }
  if (event.type !== "" && event.type !== type) {
    throw invalidArgument(
      `${root}.type`,
      `"${event.type}" does not match the payload ${payloadFieldForType(type)}, whose type is "${type}"`,
    );
  }
  if (event.id !== "" && !isValidEventId(event.id)) {
    throw invalidArgument(`${root}.id`, `must be 1 to ${MAX_EVENT_ID_LENGTH} of A-Z a-z 0-9 . _ : -`);
  }
  validatePayload(type, payload.value, `${root}.payload.${payloadFieldForType(type)}`);

  const normalized: Event = { ...event, type, id: event.id === "" ? newEventId() : event.id };
  const encoded = encode(normalized, root);
  const size = encoded.length;
  if (size > maxPayloadBytes) {
    const field = `${root}.payload`;
    throw new MhError(
      "INVALID_ARGUMENT",
      `${field}: the event is ${size} bytes encoded, over the limit of ${maxPayloadBytes} bytes`,
      { field, details: { ...MeasuredSize.of({ size_bytes: size }), ...SizeLimit.of({ limit_bytes: maxPayloadBytes }) } },
    );
  }
  return { event: normalized, encoded };
}

function encode(event: Event, root: string): Uint8Array {
  try {
    return Event.encode(event).finish();
  } catch (err) {
    throw new MhError("INVALID_ARGUMENT", `${root}: cannot be encoded: ${String(err)}`, { field: root, cause: err });
  }
}
