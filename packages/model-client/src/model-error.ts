/**
 * ModelError: how every model failure reaches the harness. An MhError (gRPC-aligned code) that
 * also carries the HTTP status, whether resending could help, the server's retry-after, and the
 * Managed Agents `session.error` type the harness reports it as: `model_overloaded_error`,
 * `model_rate_limited_error` or `model_request_failed_error`.
 */
import { Attempts, HttpStatus, MhError, ModelErrorKind, RETRYABLE_CODES, RequestId, type CodeName } from "@metaharness/errors";

export type ModelErrorType = "model_overloaded_error" | "model_rate_limited_error" | "model_request_failed_error";

/** What the harness reports as `retry_status` once streamMessage gave up (`retrying` is onRetry). */
export type RetryStatus = "exhausted" | "terminal";

export interface ModelErrorOptions {
  readonly errorType: ModelErrorType;
  /** HTTP status; undefined for network errors, cancellations and error events mid-stream. */
  readonly status?: number | undefined;
  /** Defaults to whether the code is retryable. */
  readonly retryable?: boolean;
  /** The server's retry-after, in ms. */
  readonly retryAfterMs?: number | undefined;
  readonly requestId?: string | undefined;
  /** The API's `error.type` (`overloaded_error`...), when it sent one. */
  readonly apiErrorType?: string | undefined;
  /** Attempts made before giving up (set by streamMessage). */
  readonly attempts?: number;
  /** Content of the failed attempt had already reached the caller's hooks. */
  readonly partialOutput?: boolean;
  readonly cause?: unknown;
}

export class ModelError extends MhError {
  readonly status: number | undefined;
  readonly errorType: ModelErrorType;
  readonly retryAfterMs: number | undefined;
  readonly requestId: string | undefined;
  readonly apiErrorType: string | undefined;
  readonly attempts: number;
  readonly partialOutput: boolean;
  readonly #retryable: boolean;

  constructor(code: CodeName, message: string, opts: ModelErrorOptions) {
    const details = {
      ...ModelErrorKind.of({ error_type: opts.errorType }),
      ...(opts.status === undefined ? {} : HttpStatus.of({ status: opts.status })),
      ...(opts.requestId === undefined ? {} : RequestId.of({ request_id: opts.requestId })),
      ...(opts.attempts === undefined ? {} : Attempts.of({ attempts: opts.attempts })),
    };
    super(code, message, { details, cause: opts.cause });
    this.status = opts.status;
    this.errorType = opts.errorType;
    this.retryAfterMs = opts.retryAfterMs;
    this.requestId = opts.requestId;
    this.apiErrorType = opts.apiErrorType;
    this.attempts = opts.attempts ?? 1;
    this.partialOutput = opts.partialOutput ?? false;
    this.#retryable = opts.retryable ?? RETRYABLE_CODES.has(code);
  }

  /** Whether sending the same request again could succeed. */
  override get retryable(): boolean {
    return this.#retryable;
  }

  get retryStatus(): RetryStatus {
    return this.retryable ? "exhausted" : "terminal";
  }

  /** The same error, recording how streamMessage's attempts ended. */
  withOutcome(outcome: { readonly attempts: number; readonly partialOutput: boolean }): ModelError {
    return new ModelError(this.code, this.message, {
      errorType: this.errorType,
      status: this.status,
      retryable: this.retryable,
      retryAfterMs: this.retryAfterMs,
      requestId: this.requestId,
      apiErrorType: this.apiErrorType,
      attempts: outcome.attempts,
      partialOutput: outcome.partialOutput,
      cause: this.cause,
    });
  }
}

export function cancelled(cause?: unknown): ModelError {
  return new ModelError("CANCELLED", "model request cancelled", {
    errorType: "model_request_failed_error",
    retryable: false,
    cause,
  });
}
