/**
 * The closed vocabulary of error codes. Names and numbers are gRPC's status codes, so a code maps
 * onto the wire without a table. The HTTP status of each is the gateway's (its error catalog).
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
