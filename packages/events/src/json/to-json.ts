/**
 * Events as the Managed Agents HTTP API serves them: `{ id, type, processed_at, ...fields }` in
 * snake_case, plus our `seq` and `session_id`. The gateway and the SSE stream both use this, so
 * a client built on the official SDK reads our events unchanged.
 */
import type { Event } from "@metaharness/proto";
import { MhError } from "@metaharness/errors";
import { typeForPayloadCase } from "../registry.js";
import { renderBody } from "./render.js";
import type { ManagedAgentsEventJson } from "./types.js";

/** Renders a stored event; throws INTERNAL for an event without a payload (which the log refuses). */
export function toManagedAgentsJson(event: Event): ManagedAgentsEventJson {
  const payload = event.payload;
  const type = payload === undefined ? undefined : typeForPayloadCase(payload.$case as string);
  if (payload === undefined || type === undefined) {
    throw new MhError("INTERNAL", `event ${event.id} (seq ${event.seq}) has no known payload to render`);
  }
  const json = {
    id: event.id,
    type,
    processed_at: event.createdAt?.toISOString() ?? null,
    seq: event.seq,
    session_id: event.sessionId,
    ...renderBody(type, payload.value),
  };
  // The spread loses the link between `type` and the body that TypeScript cannot track; the
  // renderer table keeps it.
  return json as ManagedAgentsEventJson;
}
