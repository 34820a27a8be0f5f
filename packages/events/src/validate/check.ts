/**
 * The small checks every payload validator is made of. Each throws INVALID_ARGUMENT naming the
 * field by its full path in protobuf names ("event.payload.agent_tool_use.name"), because gRPC
 * callers think in proto names and the HTTP gateway passes its own JSON prefix instead.
 */
import { invalidArgument } from "@metaharness/errors";
import { MAX_EVENT_ID_LENGTH, isValidEventId } from "../ids.js";
import type { EventType, PayloadOf } from "../registry.js";

/** Checks one payload; `path` is where it sits, e.g. "event.payload.user_message". */
export type PayloadValidator<T extends EventType> = (payload: PayloadOf<T>, path: string) => void;

/** The validators of one domain ("user", "agent", ...), one per type of that domain. */
export type DomainValidators<Domain extends string> = {
  readonly [T in Extract<EventType, `${Domain}.${string}`>]: PayloadValidator<T>;
};

export function noPayloadFields(): void {
  // Nothing to check: the payload message has no fields.
}

export function requireString(value: string, field: string): void {
  if (value === "") throw invalidArgument(field, "is required");
}

/** A reference to another event (tool_use_id, model_request_start_id, ...). */
export function requireEventId(value: string, field: string): void {
  requireString(value, field);
  if (!isValidEventId(value)) {
    throw invalidArgument(field, `must be an event id: 1 to ${MAX_EVENT_ID_LENGTH} of A-Z a-z 0-9 . _ : -`);
  }
}

/** The non-negative members of a ts-proto enum (its UNRECOGNIZED is -1). */
export function enumValues(enumObject: Readonly<Record<string, string | number>>): ReadonlySet<number> {
  return new Set(Object.values(enumObject).filter((v): v is number => typeof v === "number" && v >= 0));
}

/** A known enum value; `unspecified` (0) only when `allowUnspecified`. */
export function requireEnum(
  value: number,
  known: ReadonlySet<number>,
  field: string,
  options: { readonly allowUnspecified: boolean; readonly expected: string },
): void {
  if (value === 0 && !options.allowUnspecified) {
    throw invalidArgument(field, `is required: ${options.expected}`);
  }
  if (!known.has(value)) throw invalidArgument(field, `must be ${options.expected}, not ${value}`);
}
