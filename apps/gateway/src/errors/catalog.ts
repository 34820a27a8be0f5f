/**
 * Every error the gateway can answer with, in one table: its HTTP status, the Anthropic
 * `error.type`, the `details.error_code` the official SDK turns into a typed exception, and the
 * SDK exception a caller catches. docs/api.md carries the same table; a test keeps both in step,
 * as fastify does for its own error codes. Nothing else in the gateway invents a status.
 */
import type { CodeName } from "@metaharness/errors";
import type { ErrorType } from "@anthropic-ai/sdk/resources/shared";

/**
 * The SDK's ErrorType, plus `request_too_large`, which Anthropic's API documents for 413 but the
 * SDK's union does not list, and `precondition_failed_error` for 412 (the SDK's union has only the
 * memory stores' kind of it; it maps 412 by status and `error_code`).
 */
export type GatewayErrorType = ErrorType | "request_too_large" | "precondition_failed_error";

export interface CatalogEntry {
  readonly status: number;
  readonly type: GatewayErrorType;
  /** Sent as `error.details.error_code`; the SDK maps `<status> <error_code>` to a typed class. */
  readonly errorCode?: string;
  /** What `client.beta.*` throws for it (an `APIError` subclass of the SDK). */
  readonly sdkError: string;
  /**
   * Sent as `x-should-retry`, which the SDK obeys over its own rule (it retries 409, 429 and
   * 5xx by default): false for conflicts a retry cannot fix.
   */
  readonly retry: boolean;
  readonly when: string;
}

export const ERROR_CATALOG = {
  invalid_request: {
    status: 400,
    type: "invalid_request_error",
    sdkError: "BadRequestError",
    retry: false,
    when: "A body, query or path field is missing or malformed (the message starts with the field, e.g. `tools[0].name: ...`), or the operation is not allowed in the object's state.",
  },
  invalid_metadata: {
    status: 400,
    type: "invalid_request_error",
    errorCode: "invalid_metadata",
    sdkError: "BetaInvalidMetadataError",
    retry: false,
    when: "`metadata` has more than 16 keys, a key over 64 characters or a value over 512.",
  },
  environment_archived: {
    status: 400,
    type: "invalid_request_error",
    errorCode: "environment_archived",
    sdkError: "BetaEnvironmentArchivedError",
    retry: false,
    when: "An archived environment is updated, or named by a new session.",
  },
  invalid_config_type_change: {
    status: 400,
    type: "invalid_request_error",
    errorCode: "invalid_config_type_change",
    sdkError: "BetaInvalidConfigTypeChangeError",
    retry: false,
    when: "An environment update sends a `config.type` other than the stored one.",
  },
  model_not_budgetable: {
    status: 400,
    type: "invalid_request_error",
    errorCode: "model_not_budgetable",
    sdkError: "BadRequestError",
    retry: false,
    when: "A session is given a `budget` (created with one, or it is raised) while its agent's model has no list price in this gateway's price table (MH_MODEL_PRICES), so its cost cannot be measured.",
  },
  budget_create_only: {
    status: 400,
    type: "invalid_request_error",
    errorCode: "budget_create_only",
    sdkError: "BadRequestError",
    retry: false,
    when: "A session update sets a `budget` on a session created without one, or whose budget was removed.",
  },
  budget_not_raised: {
    status: 400,
    type: "invalid_request_error",
    errorCode: "budget_not_raised",
    sdkError: "BadRequestError",
    retry: false,
    when: "A session update sets `budget.max_list_cost` at or below the list cost the session has already consumed.",
  },
  authentication_failed: {
    status: 401,
    type: "authentication_error",
    sdkError: "AuthenticationError",
    retry: false,
    when: "The credential (`x-api-key`, or `Authorization: Bearer`: an API key, an environment key or a work item's sessions token) is missing, unknown or revoked.",
  },
  permission_denied: {
    status: 403,
    type: "permission_error",
    sdkError: "PermissionDeniedError",
    retry: false,
    when: "The credential is not one the endpoint takes (an API key where an environment key is needed, or the reverse), a sessions token whose work item has passed to another worker, stopped or outlived its lease, or a backend refused the operation (PERMISSION_DENIED). Other tenants' objects are never a 403: they are not found.",
  },
  not_found: {
    status: 404,
    type: "not_found_error",
    sdkError: "NotFoundError",
    retry: false,
    when: "No such route, or no such object for this API key's tenant (another tenant's object reads as missing).",
  },
  environment_not_found: {
    status: 404,
    type: "not_found_error",
    errorCode: "environment_not_found",
    sdkError: "BetaEnvironmentNotFoundError",
    retry: false,
    when: "`environment_id` of a new session names no environment of this tenant.",
  },
  conflict: {
    status: 409,
    type: "conflict_error",
    sdkError: "ConflictError",
    retry: false,
    when: "An agent update carries a `version` other than the agent's current one (optimistic concurrency), an object with that id already exists, or a work item is not in a state that allows the call (ack of an item delivered to another worker or stopped, stop of a stopped item).",
  },
  heartbeat_precondition_failed: {
    status: 412,
    type: "precondition_failed_error",
    errorCode: "heartbeat_precondition_failed",
    sdkError: "BetaHeartbeatPreconditionFailedError",
    retry: false,
    when: "A work item heartbeat's `expected_last_heartbeat` is not the stored one, or its sessions token is of an earlier delivery: the lease was lost. `details.current_state` is the lease as the gateway holds it.",
  },
  request_too_large: {
    status: 413,
    type: "request_too_large",
    sdkError: "ContentTooLargeError",
    retry: false,
    when: "The request body is over the gateway's limit (`MH_GATEWAY_BODY_LIMIT_BYTES`), an event is over the session log's, or the request as sent to a service behind the gateway is over one gRPC message (16 MiB; JSON can grow as protobuf).",
  },
  rate_limited: {
    status: 429,
    type: "rate_limit_error",
    sdkError: "RateLimitError",
    retry: true,
    when: "The tenant already has `MH_GATEWAY_MAX_STREAMS_PER_TENANT` open event streams, or a backend is out of capacity (RESOURCE_EXHAUSTED, other than a message over its size limit).",
  },
  internal: {
    status: 500,
    type: "api_error",
    sdkError: "InternalServerError",
    retry: true,
    when: "A bug or an unexpected failure; the gateway logs it with the request id.",
  },
  not_implemented: {
    status: 501,
    type: "api_error",
    errorCode: "not_implemented",
    sdkError: "NotImplementedError",
    retry: false,
    when: "A call a service behind the gateway does not implement (its gRPC UNIMPLEMENTED), e.g. an older session log during a rollout.",
  },
  credential_vault_unconfigured: {
    status: 501,
    type: "api_error",
    errorCode: "credential_vault_unconfigured",
    sdkError: "NotImplementedError",
    retry: false,
    when: "The gateway runs without a credential vault proxy (`MH_CREDENTIAL_PROXY_ADDR`): vaults and credentials, `vault_ids` on a new session, and `github_repository` resources (cloned through it) are not available in this deployment.",
  },
  unavailable: {
    status: 503,
    type: "overloaded_error",
    sdkError: "ServiceUnavailableError",
    retry: true,
    when: "The session log or the database cannot be reached, or the gateway is shutting down; on the trace page's route, Jaeger cannot be reached (or is not configured).",
  },
  timeout: {
    status: 504,
    type: "timeout_error",
    sdkError: "GatewayTimeoutError",
    retry: true,
    when: "A backend call (or a read from Jaeger) ran past its deadline.",
  },
} as const satisfies Record<string, CatalogEntry>;

export type GatewayErrorName = keyof typeof ERROR_CATALOG;

/** How an MhError from a backend (or from our own validation) is answered. Total over CodeName. */
export const ERROR_FOR_CODE: Readonly<Record<CodeName, GatewayErrorName>> = {
  INVALID_ARGUMENT: "invalid_request",
  FAILED_PRECONDITION: "invalid_request",
  OUT_OF_RANGE: "invalid_request",
  // Only a backend says UNAUTHENTICATED (our own key checks raise ApiErrors): the gateway's service
  // token was refused, a deployment fault that the client's API key has nothing to do with.
  UNAUTHENTICATED: "internal",
  PERMISSION_DENIED: "permission_denied",
  NOT_FOUND: "not_found",
  ALREADY_EXISTS: "conflict",
  ABORTED: "conflict",
  RESOURCE_EXHAUSTED: "rate_limited",
  UNIMPLEMENTED: "not_implemented",
  CANCELLED: "unavailable",
  UNAVAILABLE: "unavailable",
  DEADLINE_EXCEEDED: "timeout",
  INTERNAL: "internal",
  UNKNOWN: "internal",
  DATA_LOSS: "internal",
};

/**
 * Errors any authenticated route can return (a bad `anthropic-beta` header is an invalid_request
 * anywhere); docs/api.md lists them once, not per endpoint.
 */
export const COMMON_ERRORS: readonly GatewayErrorName[] = [
  "invalid_request",
  "authentication_failed",
  "rate_limited",
  "internal",
  "unavailable",
  "timeout",
];
