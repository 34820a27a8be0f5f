/**
 * Request schemas of /v1/environments/{id}/work, after the SDK's
 * WorkPollParams, WorkHeartbeatParams, WorkStopParams, WorkUpdateParams and WorkListParams
 * (resources/beta/environments/work.d.ts).
 */
import { metadataPatch, nullable, obj, pageQuery, pathParams, type JsonSchema } from "../http/json-schema.js";

export const workParams = pathParams("environment_id", "work_id");

// Nullable as the SDK types them: it sends null as an empty value (`block_ms=`), read as absent.
export const pollQuery: JsonSchema = obj({
  block_ms: { type: ["integer", "null"], minimum: 1, maximum: 999, description: "Wait up to this long (1-999 ms) for work; absent: return at once." },
  reclaim_older_than_ms: {
    type: ["integer", "null"],
    minimum: 0,
    description: "Hand out again items delivered but not acknowledged for this long (default 5000).",
  },
});

export const heartbeatQuery: JsonSchema = obj({
  desired_ttl_seconds: { type: ["integer", "null"], minimum: 1, description: "The lease's TTL; at most 600 (more is clamped)." },
  expected_last_heartbeat: {
    type: ["string", "null"],
    maxLength: 64,
    description: "NO_HEARTBEAT for the first beat, then the last_heartbeat the previous answer returned.",
  },
});

/** The SDK always sends a body; a bare POST (curl) is a stop without force. */
export const stopBody: JsonSchema = nullable(obj({ force: { type: ["boolean", "null"] } }));

export const updateWorkBody: JsonSchema = obj({ metadata: { ...metadataPatch, type: "object" } }, ["metadata"]);

export const listWorkQuery: JsonSchema = obj({ ...pageQuery });
