/** Payload rules of the span.* events: timing and token usage of model requests. */
import { noPayloadFields, requireEventId, type DomainValidators } from "./check.js";

export const SPAN_VALIDATORS: DomainValidators<"span"> = {
  "span.model_request_start": noPayloadFields,
  "span.model_request_end": (p, path) => {
    requireEventId(p.modelRequestStartId, `${path}.model_request_start_id`);
  },
};
