/**
 * Runs a synchronous piece of a gRPC call without capturing stack traces. grpc-js makes an Error
 * at every call's start, only to append its formatted stack to the Error of a call that fails
 * or is cancelled ("for call at"), and formats a status Error's stack for every call that ends
 * badly, a cancel of our own included. Our callers get an MhError (code, message, field,
 * details) with that Error as its cause; a logged cause then says "no stack trace available".
 * Capturing them was the largest single cost of a call in the harness's profile
 * (makeUnaryRequest's `new Error()`, 10-30 us), and formatting one for each stream a client
 * cancels another (issue 31). Synchronous, so nothing else runs with the limit changed.
 */
export function withoutStackTraces<T>(fn: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return fn();
  } finally {
    Error.stackTraceLimit = limit;
  }
}
