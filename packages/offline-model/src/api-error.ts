/**
 * The Anthropic API's error vocabulary, as this server answers with it: each HTTP status with its
 * `error.type`, the body shape `{"type":"error","error":{type,message},"request_id"}` shared by HTTP
 * errors and the SSE `error` event, and `ApiError`, which a handler throws to produce one.
 */

export const ERROR_TYPE_BY_STATUS = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  529: "overloaded_error",
} as const;

export type ErrorStatus = keyof typeof ERROR_TYPE_BY_STATUS;
export type ApiErrorType = (typeof ERROR_TYPE_BY_STATUS)[ErrorStatus];

export interface ErrorBody {
  readonly type: "error";
  readonly error: { readonly type: ApiErrorType; readonly message: string };
  readonly request_id: string;
}

/** The real API's wording for the errors that carry no specific message. */
export const DEFAULT_ERROR_MESSAGES: Readonly<Record<ErrorStatus, string>> = {
  400: "Invalid request",
  401: "invalid x-api-key",
  403: "Your API key does not have permission to use the specified resource.",
  404: "Not found",
  413: "Request exceeds the maximum allowed number of bytes.",
  429: "Number of request tokens has exceeded your per-minute rate limit",
  500: "Internal server error",
  529: "Overloaded",
};

export function isErrorStatus(n: number): n is ErrorStatus {
  return Object.hasOwn(ERROR_TYPE_BY_STATUS, n);
}

/** Thrown inside a handler; the route turns it into the status, headers and body it names. */
export class ApiError extends Error {
  override readonly name = "ApiError";
  readonly status: ErrorStatus;
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: ErrorStatus, message: string = DEFAULT_ERROR_MESSAGES[status], headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.headers = headers;
  }

  get type(): ApiErrorType {
    return ERROR_TYPE_BY_STATUS[this.status];
  }
}

/** A 400 naming the request field at fault, worded like the real API: `max_tokens: Field required`. */
export function invalidRequest(field: string, message: string): ApiError {
  return new ApiError(400, field === "" ? message : `${field}: ${message}`);
}

export function errorBody(type: ApiErrorType, message: string, requestId: string): ErrorBody {
  return { type: "error", error: { type, message }, request_id: requestId };
}
