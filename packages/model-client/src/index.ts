/**
 * @metaharness/model-client: the model behind one interface for the harness — the official
 * Anthropic SDK, streaming, with visible retries and one error type (ModelError).
 */
export { createModelClient, type ModelClient } from "./client.js";
export {
  DEFAULT_MAX_TOKENS,
  DEFAULT_RETRY,
  DEFAULT_TIMEOUT_MS,
  type ModelClientOptions,
  type RetryOptions,
} from "./options.js";
export { ModelError, type ModelErrorOptions, type ModelErrorType, type RetryStatus } from "./model-error.js";
export { toModelError } from "./classify.js";
/** The fetch the client gives the SDK, for a caller making an SDK client of its own (test/bench/request-cpu.ts). */
export { createNodeFetch, type NodeFetch } from "./node-fetch.js";
export { parseRetryAfter } from "./retry-after.js";
export type { DiscardInfo, RetryInfo, StreamHooks, StreamParams, StreamResult } from "./types.js";
