/**
 * MhError <-> gRPC status, both ways. On the way out the code and message travel as the status,
 * the field at fault and the details as trailing metadata; INTERNAL/UNKNOWN errors are replaced
 * by a generic message carrying the trace id, so internals never reach a caller. On the way in a
 * ServiceError becomes an MhError again, field and details included.
 */
import { Metadata, type ServiceError, type StatusObject } from "@grpc/grpc-js";
import { MhError, SizeLimit, codeName, type CodeName } from "@metaharness/errors";

/** Trailer naming the request field at fault. */
export const ERROR_FIELD_KEY = "mh-error-field";
/** Trailer holding the error details as a JSON object. */
export const ERROR_DETAILS_KEY = "mh-error-details";

/** Codes whose message may describe our internals: callers get a generic message instead. */
const HIDDEN_CODES: ReadonlySet<CodeName> = new Set<CodeName>(["INTERNAL", "UNKNOWN"]);
/** Codes that mean the server, not the caller, is at fault: logged at error level. */
const SERVER_FAULT_CODES: ReadonlySet<CodeName> = new Set<CodeName>(["INTERNAL", "UNKNOWN", "DATA_LOSS"]);

export function isServerFault(err: MhError): boolean {
  return SERVER_FAULT_CODES.has(err.code);
}

/** What a server sends for a failed call: an Error that grpc-js turns into the call's status. */
export type StatusError = Error & Pick<StatusObject, "code" | "details" | "metadata">;

/**
 * The status a failed call ends with. `traceId` goes into the generic message of hidden codes so
 * an operator can find the logged error.
 */
export function toStatusError(err: MhError, traceId: string | undefined): StatusError {
  const hidden = HIDDEN_CODES.has(err.code);
  const message = hidden ? `internal error${traceId === undefined ? "" : ` (trace ${traceId})`}` : err.message;
  const metadata = new Metadata();
  if (!hidden) {
    if (err.field !== undefined) metadata.set(ERROR_FIELD_KEY, encodeField(err.field));
    if (Object.keys(err.details).length > 0) metadata.set(ERROR_DETAILS_KEY, asciiJson(err.details));
  }
  return Object.assign(new Error(message), { code: err.codeNumber, details: message, metadata });
}

/*
 * Metadata values are printable ASCII: grpc-js throws on any other character, and a status it
 * cannot build is never sent (a lease held by "harness-ü" hung every other AcquireLease until its
 * deadline). Details go as JSON with every other character escaped (\uXXXX: still JSON); the
 * field, which may name a user's key (`labels[ключ]`), percent-encoded as grpc-message is, so an
 * ASCII field reads as it is.
 */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function encodeField(field: string): string {
  const percent = (c: string): string => [...Buffer.from(c, "utf8")].map((b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join("");
  return field.replace(/[^\x20-\x7e]|%/gu, percent);
}

function decodeField(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw; // a server before this encoding, with a stray %
  }
}

/**
 * The limit named by grpc-js when it refuses a message over a size limit, the receiver's or the
 * sender's: "Received message larger than max (20971525 vs 16777216)", "Sent message larger than
 * max (N vs. M)", "Received message that decompresses to a size larger than M", "Attempted to
 * send message with a size larger than M" (grpc-js 1.14). The status is RESOURCE_EXHAUSTED, as
 * for a server out of capacity, but no retry of the same call will pass.
 */
const SIZE_REFUSAL = /message (?:larger than max \(\d+ vs\.? (\d+)\)|(?:that decompresses to|with) a size larger than (\d+))/;

/** The limit a RESOURCE_EXHAUSTED from grpc-js's message size checks names, if it is one. */
export function messageSizeLimit(code: number, message: string): number | undefined {
  if (codeName(code) !== "RESOURCE_EXHAUSTED") return undefined;
  const m = SIZE_REFUSAL.exec(message);
  const limit = m?.[1] ?? m?.[2];
  return limit === undefined ? undefined : Number(limit);
}

/**
 * The MhError a client sees for a failed call, with field and details read back from trailers.
 * A message refused for its size carries `limit_bytes` in its details, as our own size refusals
 * do, so callers can tell it from a server out of capacity.
 */
export function fromServiceError(err: ServiceError): MhError {
  const code = codeName(err.code) ?? "UNKNOWN";
  const trailers = err.metadata instanceof Metadata ? err.metadata : new Metadata();
  const message = err.details || err.message;
  const limit = messageSizeLimit(err.code, message);
  const details = parseDetails(firstString(trailers, ERROR_DETAILS_KEY));
  return new MhError(code, message, {
    field: decodeField(firstString(trailers, ERROR_FIELD_KEY)),
    details: limit === undefined ? details : { ...details, ...SizeLimit.of({ limit_bytes: limit }) },
    cause: err,
  });
}

/** Normalises any failure: a ServiceError keeps its trailers, anything else goes through MhError.from. */
export function toMhError(err: unknown): MhError {
  return isServiceError(err) ? fromServiceError(err) : MhError.from(err);
}

export function isServiceError(err: unknown): err is ServiceError {
  return (
    err instanceof Error &&
    typeof (err as Partial<ServiceError>).code === "number" &&
    typeof (err as Partial<ServiceError>).details === "string" &&
    (err as Partial<ServiceError>).metadata instanceof Metadata
  );
}

function firstString(md: Metadata, key: string): string | undefined {
  const [value] = md.get(key);
  if (value === undefined) return undefined;
  return typeof value === "string" ? value : value.toString("utf8");
}

type Details = Record<string, string | number | boolean>;

function parseDetails(json: string | undefined): Details | undefined {
  if (json === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined;
  const details: Details = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") details[k] = v;
  }
  return details;
}
