/** Payload rules of the sandbox.* events: every one names the sandbox it is about. */
import { requireString, type DomainValidators } from "./check.js";

export const SANDBOX_VALIDATORS: DomainValidators<"sandbox"> = {
  "sandbox.provisioned": (p, path) => requireString(p.sandboxId, `${path}.sandbox_id`),
  "sandbox.released": (p, path) => requireString(p.sandboxId, `${path}.sandbox_id`),
  "sandbox.lost": (p, path) => requireString(p.sandboxId, `${path}.sandbox_id`),
};
