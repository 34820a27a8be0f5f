/**
 * Ids of the objects the gateway owns, in the Managed Agents spelling: `agent_...`, `env_...`,
 * `sesrsc_...`, request ids `req_...`. The body is the same time-ordered ULID as event and session
 * ids (from @metaharness/events), so ids sort by creation within one process.
 */
import { EVENT_ID_PREFIX, newEventId } from "@metaharness/events";

export const AGENT_ID_PREFIX = "agent_";
export const ENVIRONMENT_ID_PREFIX = "env_";
export const RESOURCE_ID_PREFIX = "sesrsc_";
export const REQUEST_ID_PREFIX = "req_";

// @metaharness/events exposes prefixed ULIDs only for events and sessions; borrowing the body of
// an event id keeps one generator (monotonic within the process) for every id we make.
function ulid(): string {
  return newEventId().slice(EVENT_ID_PREFIX.length);
}

export function newId(prefix: string): string {
  return prefix + ulid();
}
