/** Payload rules of the system.* events: system-role content the client adds (text only). */
import type { DomainValidators } from "./check.js";
import { SYSTEM_MESSAGE_BLOCKS, validateContent } from "./content.js";

export const SYSTEM_VALIDATORS: DomainValidators<"system"> = {
  "system.message": (p, path) => {
    validateContent(p.content, `${path}.content`, { allowed: SYSTEM_MESSAGE_BLOCKS, nonEmpty: true });
  },
};
