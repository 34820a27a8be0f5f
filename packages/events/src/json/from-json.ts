/**
 * Client input of the HTTP API (the SDK's BetaManagedAgentsUser*EventParams and
 * BetaManagedAgentsSystemMessageEventParams) into events. Only the user.* types and system.message
 * can be sent; everything else is written by the harness, the broker, the gateway or the log.
 * Errors name the JSON field ("events[0].content[1].text"): the shape is checked here, and the
 * payload rules run with the JSON prefix, since user.* fields have the same names in both forms.
 */
import type { Event } from "@metaharness/proto";
import { invalidArgument } from "@metaharness/errors";
import { MAX_EVENT_ID_LENGTH, isValidEventId } from "../ids.js";
import { payloadCaseForType, type EventType, type PayloadOf } from "../registry.js";
import { validatePayload } from "../validate/payload.js";
import { parseContent } from "./content-params.js";
import { CONFIRMATION_FROM_JSON } from "./enums.js";
import {
  asObject,
  onlyKeys,
  optionalArray,
  optionalBoolean,
  optionalString,
  requiredArray,
  requiredString,
  type JsonObject,
} from "./read.js";

/** What a client may send: the user.* types and system.message. */
export type UserEventType = Extract<EventType, `user.${string}` | "system.message">;

type Parser<T extends UserEventType> = (params: JsonObject, field: string) => PayloadOf<T>;

/** Our one addition to the SDK's params: an optional client-chosen `id`, the idempotency key. */
const ENVELOPE_KEYS = ["type", "id"] as const;
const RESULT_KEYS = [...ENVELOPE_KEYS, "content", "is_error"] as const;

const PARSERS: { readonly [T in UserEventType]: Parser<T> } = {
  "user.message": (params, field) => {
    onlyKeys(params, [...ENVELOPE_KEYS, "content"], field);
    return { content: parseContent(requiredArray(params, "content", field), `${field}.content`) };
  },
  "user.interrupt": (params, field) => {
    onlyKeys(params, [...ENVELOPE_KEYS, "session_thread_id"], field);
    if (optionalString(params, "session_thread_id", field) !== "") {
      throw invalidArgument(`${field}.session_thread_id`, "is not supported: sessions have a single thread");
    }
    return {};
  },
  "user.custom_tool_result": (params, field) => {
    onlyKeys(params, [...RESULT_KEYS, "custom_tool_use_id"], field);
    return {
      customToolUseId: requiredString(params, "custom_tool_use_id", field),
      content: parseContent(optionalArray(params, "content", field), `${field}.content`),
      isError: optionalBoolean(params, "is_error", field),
    };
  },
  "user.tool_confirmation": (params, field) => {
    onlyKeys(params, [...ENVELOPE_KEYS, "tool_use_id", "result", "deny_message"], field);
    const resultJson = requiredString(params, "result", field);
    const result = CONFIRMATION_FROM_JSON.get(resultJson);
    if (result === undefined) throw invalidArgument(`${field}.result`, `must be "allow" or "deny", not "${resultJson}"`);
    return {
      toolUseId: requiredString(params, "tool_use_id", field),
      result,
      denyMessage: optionalString(params, "deny_message", field),
    };
  },
  "user.tool_result": (params, field) => {
    onlyKeys(params, [...RESULT_KEYS, "tool_use_id"], field);
    return {
      toolUseId: requiredString(params, "tool_use_id", field),
      content: parseContent(optionalArray(params, "content", field), `${field}.content`),
      isError: optionalBoolean(params, "is_error", field),
    };
  },
  "system.message": (params, field) => {
    onlyKeys(params, [...ENVELOPE_KEYS, "content"], field);
    return { content: parseContent(requiredArray(params, "content", field), `${field}.content`) };
  },
};

export const USER_EVENT_TYPES: readonly UserEventType[] = Object.keys(PARSERS) as UserEventType[];

function isUserEventType(type: string): type is UserEventType {
  return Object.hasOwn(PARSERS, type);
}

function parsePayload<T extends UserEventType>(type: T, params: JsonObject, field: string): PayloadOf<T> {
  const parse: Parser<T> = PARSERS[type];
  const payload = parse(params, field);
  validatePayload(type, payload, field);
  return payload;
}

/**
 * Parses one element of a send-events request body into an Event with `type`, `payload` and
 * `id` (empty unless the client chose one) set; the rest is for the log to fill in.
 */
export function fromManagedAgentsParams(json: unknown, field = "events[0]"): Event {
  const params = asObject(json, field);
  const type = requiredString(params, "type", field);
  if (!isUserEventType(type)) {
    throw invalidArgument(`${field}.type`, `"${type}" cannot be sent; expected one of ${USER_EVENT_TYPES.join(", ")}`);
  }
  const id = optionalString(params, "id", field);
  if (id !== "" && !isValidEventId(id)) {
    throw invalidArgument(`${field}.id`, `must be 1 to ${MAX_EVENT_ID_LENGTH} of A-Z a-z 0-9 . _ : -`);
  }
  const payload = parsePayload(type, params, field);
  return {
    id,
    sessionId: "",
    seq: 0,
    type,
    createdAt: undefined,
    traceContext: undefined,
    // As in newEvent: the $case belongs to `type` by construction of the registry.
    payload: { $case: payloadCaseForType(type), value: payload } as Event["payload"],
  };
}
