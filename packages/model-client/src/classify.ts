/**
 * Turns whatever the SDK threw into a ModelError: HTTP statuses by the table below, an SSE `error`
 * event mid-stream (the SDK throws it as an APIError with no status, only `type`) by its type,
 * dropped connections and cut-off streams as UNAVAILABLE, and the caller's abort as CANCELLED.
 *
 *   status / cause               code                 retryable  session.error type
 *   429, rate_limit_error        RESOURCE_EXHAUSTED   yes        model_rate_limited_error
 *   529, overloaded_error        UNAVAILABLE          yes        model_overloaded_error
 *   500-599, api_error           UNAVAILABLE          yes        model_request_failed_error
 *   network, stream cut off      UNAVAILABLE          yes        model_request_failed_error
 *   timeout (to headers), 408    DEADLINE_EXCEEDED    yes        model_request_failed_error
 *   409                          ABORTED              yes        model_request_failed_error
 *   400, 413                     INVALID_ARGUMENT     no         model_request_failed_error
 *   401                          UNAUTHENTICATED      no         model_request_failed_error
 *   403                          PERMISSION_DENIED    no         model_request_failed_error
 *   404                          NOT_FOUND            no         model_request_failed_error
 *   other 4xx                    FAILED_PRECONDITION  no         model_request_failed_error
 *   abort (caller's signal)      CANCELLED            no         model_request_failed_error
 */
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  AnthropicError,
} from "@anthropic-ai/sdk";
import type { CodeName } from "@metaharness/errors";
import { parseRetryAfter } from "./retry-after.js";
import { ModelError, cancelled, type ModelErrorType } from "./model-error.js";

const BY_STATUS: Readonly<Record<number, CodeName>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  408: "DEADLINE_EXCEEDED",
  409: "ABORTED",
  413: "INVALID_ARGUMENT",
  429: "RESOURCE_EXHAUSTED",
};

const BY_API_TYPE: Readonly<Record<string, CodeName>> = {
  overloaded_error: "UNAVAILABLE",
  api_error: "UNAVAILABLE",
  rate_limit_error: "RESOURCE_EXHAUSTED",
  timeout_error: "DEADLINE_EXCEEDED",
  invalid_request_error: "INVALID_ARGUMENT",
  authentication_error: "UNAUTHENTICATED",
  permission_error: "PERMISSION_DENIED",
  not_found_error: "NOT_FOUND",
};

function codeForStatus(status: number): CodeName {
  return BY_STATUS[status] ?? (status >= 500 ? "UNAVAILABLE" : "FAILED_PRECONDITION");
}

function errorTypeOf(status: number | undefined, apiType: string | null): ModelErrorType {
  if (status === 529 || apiType === "overloaded_error") return "model_overloaded_error";
  if (status === 429 || apiType === "rate_limit_error") return "model_rate_limited_error";
  return "model_request_failed_error";
}

function fromApiError(err: APIError): ModelError {
  const status = err.status;
  const code = status !== undefined ? codeForStatus(status) : (BY_API_TYPE[err.type ?? ""] ?? "UNKNOWN");
  const what = err.apiMessage ?? err.message;
  const message = status !== undefined ? `model request failed with ${status}: ${what}` : `model stream failed: ${err.type ?? "error"}: ${what}`;
  return new ModelError(code, message, {
    errorType: errorTypeOf(status, err.type),
    status,
    retryAfterMs: parseRetryAfter(err.headers),
    requestId: err.requestID ?? undefined,
    apiErrorType: err.type ?? undefined,
    cause: err,
  });
}

function unavailable(message: string, cause: unknown): ModelError {
  return new ModelError("UNAVAILABLE", message, { errorType: "model_request_failed_error", cause });
}

export function toModelError(err: unknown, signal?: AbortSignal): ModelError {
  if (err instanceof ModelError) return err;
  if (signal?.aborted === true || err instanceof APIUserAbortError) return cancelled(err);
  if (err instanceof APIConnectionTimeoutError) {
    return new ModelError("DEADLINE_EXCEEDED", "model request timed out before the response started", {
      errorType: "model_request_failed_error",
      cause: err,
    });
  }
  if (err instanceof APIConnectionError) return unavailable(`cannot reach the model: ${causeText(err)}`, err);
  // instanceof narrows to APIError<any, any, any>; the declared defaults are what it holds.
  if (err instanceof APIError) return fromApiError(err as APIError);
  // The SDK wraps a body cut off mid-stream ("terminated") or a stream that ended early in a plain
  // AnthropicError: the connection failed, not the request.
  if (err instanceof AnthropicError) return unavailable(`model stream broke off: ${causeText(err)}`, err);
  return new ModelError("INTERNAL", `model client failed: ${err instanceof Error ? err.message : String(err)}`, {
    errorType: "model_request_failed_error",
    retryable: false,
    cause: err,
  });
}

function causeText(err: Error): string {
  const cause: unknown = err.cause;
  return cause instanceof Error && cause.message !== "" ? `${err.message} (${cause.message})` : err.message;
}
