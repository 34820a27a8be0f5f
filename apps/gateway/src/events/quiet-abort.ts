/**
 * An event stream ends when its client goes: the SDK closes the connection with the response
 * still open, and Node's HTTP server then destroys the request with an `aborted` ConnResetException
 * (socketOnClose -> abortIncoming), capturing its stack and formatting it (the stream's destroy
 * reads `err.stack`). Nothing reads that error: the request has no `error` listener, and the
 * stream ends on the response's `close`. Its stack was 1.1% of the gateway's busy samples at 16
 * single-turn sessions through the SDK, once per session (issue 31). Around the server's own
 * close listener, and only it, stack traces are off: lowered by a listener put before the
 * server's on the socket, restored by the first listener of the response's `close`, which the
 * server's listener emits right after (and, should it not, by one put after the server's).
 */
import type { ServerResponse } from "node:http";

/** Returns what takes the listeners off again: call it when the stream ends, its connection closed or not. */
export function quietAbort(res: ServerResponse): () => void {
  const socket = res.socket;
  if (socket === null) return () => undefined;
  let limit: number | undefined;
  const lower = (): void => {
    limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
  };
  const restore = (): void => {
    if (limit === undefined) return;
    Error.stackTraceLimit = limit;
    limit = undefined;
  };
  // Plain listeners (a socket closes once), taken off when the stream ends: `once` wraps each.
  socket.prependListener("close", lower);
  res.prependListener("close", restore);
  socket.on("close", restore);
  return () => {
    socket.off("close", lower);
    socket.off("close", restore);
    res.off("close", restore);
  };
}
