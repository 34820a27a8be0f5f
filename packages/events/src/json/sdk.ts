/**
 * Events exactly as the official SDK declares them (BetaManagedAgentsSessionEvent): what the
 * gateway serves by default. Our log keeps more than the SDK types: `seq` and `session_id` on
 * every event, `sandbox_id` on agent.tool_use, `exit_code` on agent.tool_result, `model` on span.model_request_start, `stop_reason`
 * on span.model_request_end, the sandbox.* events, the stop reason "interrupted" and error types
 * of our own (`external_agent_<kind>`). Those are served only to a client that asks for them
 * (`extensions`); without it they are dropped, an interrupted turn ends as the SDK's own
 * `end_turn` (the interrupt "returns control to the user"), and an error of a type the SDK does
 * not know is its `unknown_error`, the message starting with our type.
 *
 * Ids: the log's own ids are idempotency keys, and not all are `sevt_` ids: a tool use is named
 * by the model's `toolu_...` id (the same in two sessions of a deterministic model), its answer
 * `<id>.result`, a content block `<request>.block<N>`. Served, every id is a `sevt_` id unique to
 * its session: a generated `sevt_<ULID>` as it is, any other the digest of (session, id) in
 * lower-case base32, which no ULID is (ULIDs are upper-case). The fields that name another event
 * (tool_use_id, custom_tool_use_id, mcp_tool_use_id, model_request_start_id, the requires_action
 * event_ids) are mapped the same way, so they still name the served ids.
 */
import { createHash } from "node:crypto";
import type { Event } from "@metaharness/proto";
import { EVENT_ID_PREFIX } from "../ids.js";
import { toManagedAgentsJson } from "./to-json.js";
import type { ManagedAgentsEventJson } from "./types.js";

export interface SdkJsonOptions {
  /** Meta-Harness's additions (seq, session_id, sandbox.* events, ...) are served too. */
  readonly extensions: boolean;
}

/** An event object as served: the SDK's shape, or with our additions when asked for. */
export type SdkEventJson = Record<string, unknown> & { id: string; type: string };

const GENERATED_ID = /^sevt_[0-9A-HJKMNP-TV-Z]{26}$/;
const DIGEST_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
const DIGEST_CHARS = 26;

/** The id a client sees for event `id` of session `sessionId`; stable, and unique per session. */
export function publicEventId(sessionId: string, id: string): string {
  if (GENERATED_ID.test(id)) return id;
  const digest = createHash("sha256").update(sessionId).update("\n").update(id).digest();
  let out = "";
  // 5 bits per character from the digest's first 130 bits.
  let acc = 0;
  let bits = 0;
  for (const byte of digest) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < DIGEST_CHARS) {
      out += DIGEST_ALPHABET.charAt((acc >> (bits - 5)) & 31);
      bits -= 5;
    }
    acc &= (1 << bits) - 1;
    if (out.length === DIGEST_CHARS) break;
  }
  return EVENT_ID_PREFIX + out;
}

/** The fields of each type that name another event. */
const REFERENCES: Readonly<Record<string, readonly string[]>> = {
  "user.custom_tool_result": ["custom_tool_use_id"],
  "user.tool_confirmation": ["tool_use_id"],
  "user.tool_result": ["tool_use_id"],
  "agent.tool_result": ["tool_use_id"],
  "agent.mcp_tool_result": ["mcp_tool_use_id"],
  "span.model_request_end": ["model_request_start_id"],
};

/** Our additions per type, dropped without `extensions`. */
const ADDITIONS: Readonly<Record<string, readonly string[]>> = {
  "agent.tool_use": ["sandbox_id"],
  "agent.tool_result": ["exit_code"],
  "span.model_request_start": ["model"],
  "span.model_request_end": ["stop_reason"],
  // The SDK's event is only a marker; what was compacted is ours.
  "agent.thread_context_compacted": ["through_seq", "summary", "cleared_through_seq", "tokens_before", "tokens_after", "summary_usage"],
};

/** The SDK's session.error types (BetaManagedAgentsSessionErrorEvent["error"]["type"]). */
const SDK_ERROR_TYPES: ReadonlySet<string> = new Set([
  "unknown_error",
  "model_overloaded_error",
  "model_rate_limited_error",
  "model_request_failed_error",
  "mcp_connection_failed_error",
  "mcp_authentication_failed_error",
  "billing_error",
  "credential_host_unreachable_error",
  "tool_use_limit_reached_error",
  "compaction_limit_reached_error",
  "repository_authentication_error",
  "repository_forbidden_error",
  "repository_not_found_error",
  "repository_checkout_error",
  "repository_clone_error",
]);

/** Whether the SDK's union has this type (the sandbox.* events are ours alone). */
export function isSdkEventType(type: string): boolean {
  return !type.startsWith("sandbox.");
}

/** What a plain (no `extensions`) event drops, per type: `seq`, `session_id` and the type's ADDITIONS. */
const droppedByType = new Map<string, ReadonlySet<string>>();
const KEEP_ALL: ReadonlySet<string> = new Set();

function droppedFrom(type: string): ReadonlySet<string> {
  let dropped = droppedByType.get(type);
  if (dropped === undefined) {
    dropped = new Set(["seq", "session_id", ...(ADDITIONS[type] ?? [])]);
    droppedByType.set(type, dropped);
  }
  return dropped;
}

/**
 * The event's fields but those in `dropped`, in order, with its id and the ids it names mapped
 * to the served ones: built in one pass. A copy with the fields deleted afterwards cost a second
 * object per event served, and the deletes left it in V8's dictionary mode, slower to serialize
 * (every frame of an event stream is one, issue 31).
 */
function servedFields(json: ManagedAgentsEventJson, sessionId: string, dropped: ReadonlySet<string>): Record<string, unknown> {
  const references = REFERENCES[json.type];
  const fields = json as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(fields)) {
    if (dropped.has(key)) continue;
    const value = fields[key];
    const names = key === "id" || references?.includes(key) === true;
    out[key] = names && typeof value === "string" ? publicEventId(sessionId, value) : value;
  }
  if (json.type === "session.status_idle" && json.stop_reason.type === "requires_action") {
    out["stop_reason"] = { type: "requires_action", event_ids: json.stop_reason.event_ids.map((id) => publicEventId(sessionId, id)) };
  }
  return out;
}

/**
 * The served form of a stored event, or undefined for an event the SDK has no type for (only
 * without `extensions`): a list skips it, a stream does not send it.
 */
export function toSdkEventJson(event: Event, options: SdkJsonOptions): SdkEventJson | undefined {
  const full = toManagedAgentsJson(event);
  if (!options.extensions && !isSdkEventType(full.type)) return undefined;
  const out = servedFields(full, event.sessionId, options.extensions ? KEEP_ALL : droppedFrom(full.type));
  if (options.extensions) return out as SdkEventJson;
  if (full.type === "session.status_idle" && full.stop_reason.type === "interrupted") out["stop_reason"] = { type: "end_turn" };
  if (full.type === "session.error" && !SDK_ERROR_TYPES.has(full.error.type)) {
    const { type, message, retry_status } = full.error;
    out["error"] = { type: "unknown_error", message: `${type}: ${message}`, retry_status };
  }
  return out as SdkEventJson;
}
