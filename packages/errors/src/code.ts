/**
 * The closed vocabulary of error codes. Names and numbers are gRPC's status codes, so a code maps
 * onto the wire without a table; HTTP statuses for the gateway live next to them.
 */
export const Code = {
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export type CodeName = keyof typeof Code;
export type CodeNumber = (typeof Code)[CodeName];

const byNumber = new Map<number, CodeName>(
  Object.entries(Code).map(([name, n]) => [n, name as CodeName]),
);

export function codeName(n: number): CodeName | undefined {
  return byNumber.get(n);
}

/** Codes a caller may retry as they are: the operation did not happen, or may succeed later. */
export const RETRYABLE_CODES: ReadonlySet<CodeName> = new Set<CodeName>([
  "UNAVAILABLE",
  "DEADLINE_EXCEEDED",
  "RESOURCE_EXHAUSTED",
  "ABORTED",
]);

/** The HTTP status each code is served with (the mapping grpc-gateway and Connect use). */
export const HTTP_STATUS: Readonly<Record<CodeName, number>> = {
  CANCELLED: 499,
  UNKNOWN: 500,
  INVALID_ARGUMENT: 400,
  DEADLINE_EXCEEDED: 504,
  NOT_FOUND: 404,
  ALREADY_EXISTS: 409,
  PERMISSION_DENIED: 403,
  RESOURCE_EXHAUSTED: 429,
  FAILED_PRECONDITION: 400,
  ABORTED: 409,
  OUT_OF_RANGE: 400,
  UNIMPLEMENTED: 501,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  DATA_LOSS: 500,
  UNAUTHENTICATED: 401,
};
