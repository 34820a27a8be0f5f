/**
 * The opt-in to Meta-Harness's additions to the SDK's event shapes (`seq`, `session_id`, the
 * sandbox.* events, the stop reason "interrupted", ...; see @metaharness/events' json/sdk.ts).
 * By default every event is served exactly as the SDK declares it. A client asks for the
 * additions per request with `?mh_extensions=true` (the SDK passes `query` request options
 * through, and a browser's EventSource can set nothing else) or with the header
 * `MH-Extensions: true` (an SDK client's `defaultHeaders`, for every request at once).
 */
import type { FastifyRequest } from "fastify";
import type { SdkJsonOptions } from "@metaharness/events";
import type { JsonSchema } from "./json-schema.js";
import { headerValue } from "./headers.js";

export const EXTENSIONS_QUERY = "mh_extensions";
export const EXTENSIONS_HEADER = "mh-extensions";

/** The query parameter, for the schemas of the routes that serve events. */
export const extensionsQuery: Record<string, JsonSchema> = {
  [EXTENSIONS_QUERY]: {
    type: "boolean",
    description: "Meta-Harness: serve our additions to the SDK's event shapes (seq, session_id, sandbox.* events, ...). Also the header MH-Extensions: true.",
  },
};

export function renderOptions(req: FastifyRequest): SdkJsonOptions {
  const query = (req.query ?? {}) as Record<string, unknown>;
  const header = headerValue(req, EXTENSIONS_HEADER)?.trim().toLowerCase();
  return { extensions: query[EXTENSIONS_QUERY] === true || header === "true" || header === "1" };
}
