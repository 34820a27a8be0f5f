/**
 * Sandbox ids: "sbx_" + a ULID, like the session log's event and session ids, so they sort by
 * creation time and say what they name.
 */
import { EVENT_ID_PREFIX, newEventId } from "@metaharness/events";

export const SANDBOX_ID_PREFIX = "sbx_";
const SANDBOX_ID = /^sbx_[0-9A-HJKMNP-TV-Z]{26}$/;

export function newSandboxId(): string {
  return SANDBOX_ID_PREFIX + newEventId().slice(EVENT_ID_PREFIX.length);
}

export function isSandboxId(id: string): boolean {
  return SANDBOX_ID.test(id);
}
