/**
 * The table of payload validators, keyed by event type and assembled from one file per domain.
 * Its type demands an entry for every EventType, so a new type cannot ship unvalidated.
 */
import type { EventType, PayloadOf } from "../registry.js";
import { AGENT_VALIDATORS } from "./agent.js";
import type { PayloadValidator } from "./check.js";
import { SANDBOX_VALIDATORS } from "./sandbox.js";
import { SESSION_VALIDATORS } from "./session.js";
import { SPAN_VALIDATORS } from "./span.js";
import { SYSTEM_VALIDATORS } from "./system.js";
import { USER_VALIDATORS } from "./user.js";

const VALIDATORS: { readonly [T in EventType]: PayloadValidator<T> } = {
  ...USER_VALIDATORS,
  ...AGENT_VALIDATORS,
  ...SESSION_VALIDATORS,
  ...SPAN_VALIDATORS,
  ...SANDBOX_VALIDATORS,
  ...SYSTEM_VALIDATORS,
};

/**
 * Checks a payload of `type`, naming fields under `path` ("event.payload.user_message" for gRPC,
 * "events[0]" for the JSON of the HTTP API, whose user.* fields have the same names).
 */
export function validatePayload<T extends EventType>(type: T, payload: PayloadOf<T>, path: string): void {
  const validate: PayloadValidator<T> = VALIDATORS[type];
  validate(payload, path);
}
