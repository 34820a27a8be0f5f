/**
 * MhError: the single error type crossing our boundaries. It carries a closed code, the request
 * field at fault (for INVALID_ARGUMENT), structured details safe to show a caller, and the cause.
 */
import { Code, RETRYABLE_CODES, codeName, type CodeName } from "./code.js";

/** An error's details as they travel: flat, JSON-safe. Written and read through ErrorDetail (details/). */
export type Details = Readonly<Record<string, string | number | boolean>>;

export interface MhErrorOptions {
  /** The request field at fault, in the caller's terms: "event.payload", "limit". */
  readonly field?: string;
  /** Facts a caller can act on (e.g. `CurrentSeq.of(...)`); never secrets. */
  readonly details?: Details;
  readonly cause?: unknown;
}

export class MhError extends Error {
  override readonly name = "MhError";
  readonly code: CodeName;
  readonly field: string | undefined;
  readonly details: Details;

  constructor(code: CodeName, message: string, options: MhErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.field = options.field;
    this.details = options.details ?? {};
  }

  get codeNumber(): number {
    return Code[this.code];
  }

  get retryable(): boolean {
    return RETRYABLE_CODES.has(this.code);
  }

  /**
   * Normalises anything thrown into an MhError. An MhError passes through; an object with a
   * numeric gRPC `code` (a grpc-js ServiceError) keeps that code; everything else is INTERNAL.
   */
  static from(err: unknown): MhError {
    if (err instanceof MhError) return err;
    if (typeof err === "object" && err !== null && "code" in err) {
      const code = (err).code;
      const name = typeof code === "number" ? codeName(code) : undefined;
      if (name !== undefined) {
        const { details, message: raw } = err as { details?: unknown; message?: unknown };
        const message =
          typeof details === "string" && details !== "" ? details : typeof raw === "string" ? raw : "error";
        return new MhError(name, message, { cause: err });
      }
    }
    const message = err instanceof Error ? err.message : String(err);
    return new MhError("INTERNAL", message, { cause: err });
  }
}

/** Shorthand for the most common error: a bad request field. */
export function invalidArgument(field: string, message: string): MhError {
  return new MhError("INVALID_ARGUMENT", `${field}: ${message}`, { field });
}
