/**
 * ApiError: what a handler throws to answer with an entry of the catalog. `from(unknown)` turns
 * anything thrown (our MhErrors, backend gRPC failures, fastify's own errors) into one, so the
 * error handler has a single shape to render. The body is the Anthropic error response,
 * `{"type":"error","error":{"type","message","details"?},"request_id"}`.
 */
import { MhError, SizeLimit } from "@metaharness/errors";
import { ERROR_CATALOG, ERROR_FOR_CODE, type GatewayErrorName, type GatewayErrorType } from "./catalog.js";

export interface ErrorResponseBody {
  readonly type: "error";
  readonly error: {
    readonly type: GatewayErrorType;
    readonly message: string;
    readonly details?: { readonly error_code: string; readonly [extra: string]: unknown };
  };
  readonly request_id: string | null;
}

export class ApiError extends Error {
  override readonly name = "ApiError";
  readonly error: GatewayErrorName;
  /** Extra response headers, e.g. `retry-after`. */
  readonly headers: Readonly<Record<string, string>>;
  /** Sent in `error.details` beside the catalog's error_code, e.g. a heartbeat's `current_state`. */
  readonly details: Readonly<Record<string, unknown>>;
  /** The thrower has said all there is to log (or that nothing is): the error handler logs nothing more. */
  readonly logged: boolean;

  constructor(
    error: GatewayErrorName,
    message: string,
    options: { cause?: unknown; headers?: Record<string, string>; details?: Record<string, unknown>; logged?: boolean } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.error = error;
    this.headers = options.headers ?? {};
    this.details = options.details ?? {};
    this.logged = options.logged ?? false;
  }

  get status(): number {
    return ERROR_CATALOG[this.error].status;
  }

  /** Whether the caller could do nothing about it: logged at error level with the cause (a 501 says what is not served). */
  get serverSide(): boolean {
    return this.status >= 500 && this.status !== 501;
  }

  body(requestId: string | null): ErrorResponseBody {
    const entry: { type: GatewayErrorType; errorCode?: string } = ERROR_CATALOG[this.error];
    return {
      type: "error",
      error: {
        type: entry.type,
        message: this.message,
        ...(entry.errorCode === undefined ? {} : { details: { ...this.details, error_code: entry.errorCode } }),
      },
      request_id: requestId,
    };
  }

  static from(err: unknown): ApiError {
    if (err instanceof ApiError) return err;
    const mh = MhError.from(err);
    const tooLarge = tooLargeMessage(mh);
    if (tooLarge !== undefined) return new ApiError("request_too_large", tooLarge, { cause: err });
    const name = ERROR_FOR_CODE[mh.code];
    // Backend messages of server-side failures may describe internals; say what happened instead.
    const message = ERROR_CATALOG[name].status >= 500 ? serverMessage(name, mh) : mh.message;
    return new ApiError(name, message, { cause: err });
  }
}

/**
 * What to say of a request too large for a backend, if `err` is one: the session log refuses an
 * event over its size limit as INVALID_ARGUMENT with `limit_bytes`, and a gRPC call over a
 * message limit fails with RESOURCE_EXHAUSTED with `limit_bytes` (service kit): not a backend
 * out of capacity (429, retried by the SDK), since the same request would be refused again. A
 * request's JSON can grow as protobuf (a number in a list takes 2 bytes as JSON, 11 as a
 * google.protobuf.Value), so a body under the gateway's limit can still make a call over 16 MiB.
 */
function tooLargeMessage(err: MhError): string | undefined {
  const limit = SizeLimit.find(err)?.limit_bytes;
  if (limit === undefined) return undefined;
  if (err.code === "INVALID_ARGUMENT") return err.message;
  if (err.code !== "RESOURCE_EXHAUSTED") return undefined;
  // grpc-js says the same of a request the server refused and of an answer the client refused;
  // our clients take 1 MiB more than our servers, so an answer that large comes of a request
  // that carried nearly as much.
  return `The request, or its answer, takes more than ${String(limit)} bytes between the gateway and a service behind it, more than one call carries; send less in each request.`;
}

function serverMessage(name: GatewayErrorName, err: MhError): string {
  switch (name) {
    case "unavailable":
      return "A service behind the gateway is unavailable; retry shortly.";
    case "timeout":
      return "A service behind the gateway did not answer in time; retry shortly.";
    case "not_implemented":
      return err.message;
    default:
      return "Internal server error.";
  }
}

/** A 400 naming the field at fault, in the form the SDK's docs use: `tools[0].name: is required`. */
export function invalidRequest(field: string, message: string): ApiError {
  return new ApiError("invalid_request", field === "" ? message : `${field}: ${message}`);
}

export function notFound(kind: string, id: string): ApiError {
  return new ApiError("not_found", `${kind} ${JSON.stringify(id)} not found`);
}
