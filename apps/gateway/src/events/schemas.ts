/**
 * Request schemas of /v1/sessions/{id}/events and /events/stream, after the SDK's
 * EventListParams, EventSendParams and EventStreamParams (resources/beta/sessions/events.d.ts).
 * Event params are checked in depth by @metaharness/events' fromManagedAgentsParams.
 */
import { extensionsQuery } from "../http/extensions.js";
import { createdAtQuery, obj, pageQuery, str, type JsonSchema } from "../http/json-schema.js";

export const MAX_SEND_EVENTS = 100;
export const DELTA_TYPES = ["agent.message", "agent.thinking"] as const;

export const sendEventsBody: JsonSchema = obj(
  {
    events: {
      type: "array",
      minItems: 1,
      maxItems: MAX_SEND_EVENTS,
      items: {
        type: "object",
        required: ["type"],
        properties: { type: str("user.message, user.interrupt, user.tool_confirmation, user.custom_tool_result or user.tool_result.") },
      },
    },
  },
  ["events"],
);

export const listEventsQuery = obj({
  ...pageQuery,
  ...createdAtQuery("gt", "gte", "lt", "lte"),
  order: { enum: ["asc", "desc"] },
  types: { type: "array", items: str(undefined, { pattern: "^[a-z_]+\\.[a-z_]+$" }) },
  ...extensionsQuery,
});

export const streamEventsQuery = obj({
  event_deltas: { type: "array", items: { enum: DELTA_TYPES } },
  after_seq: {
    type: "integer",
    minimum: 0,
    description: "Meta-Harness: replay the events after this seq, then go live (the Last-Event-ID header does the same, with a seq or an event's id).",
  },
  ...extensionsQuery,
});
