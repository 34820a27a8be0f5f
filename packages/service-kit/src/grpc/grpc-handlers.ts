/**
 * Wrappers that let service code be plain async functions. Each call runs in a SERVER span
 * continuing the caller's trace (named after the session its request is about, if any), gets an AbortSignal for cancellation and deadline, and any thrown
 * error becomes a proper gRPC status (see grpc-errors.ts), logged once; its duration and status
 * are recorded in `rpc.server.call.duration` (each service's error rate).
 */
import type {
  Deadline,
  Metadata,
  ServerUnaryCall,
  ServerWritableStream,
  handleServerStreamingCall,
  handleUnaryCall,
} from "@grpc/grpc-js";
import { MhError } from "@metaharness/errors";
import {
  METRICS,
  ROOT_CONTEXT,
  SpanKind,
  currentSpanIds,
  extractFromMetadata,
  getTracer,
  histogram,
  recordError,
  secondsSince,
  type Attributes,
} from "@metaharness/telemetry";
import { isServerFault, toMhError, toStatusError, type StatusError } from "./grpc-errors.js";
import type { Logger } from "../logging/logger.js";
import { UndecodableRequest } from "./undecodable.js";
import { CallCancellation } from "./call-cancellation.js";

export interface CallContext {
  readonly metadata: Metadata;
  /** Aborted (with an MhError reason) when the client cancels or the deadline passes. */
  readonly signal: AbortSignal;
  /** Bound to this call: `rpc` plus the span's trace_id/span_id. */
  readonly logger: Logger;
  readonly deadline?: Date | undefined;
}

export interface ServerStreamWriter<Res> {
  /** Sends one message; resolves once the transport can take more, rejects if the call ended. */
  write(res: Res): Promise<void>;
  /**
   * `write` without a promise when the transport takes the message and can take more: undefined
   * then, else what `write` returns. A stream writing many small messages (a watch's events) makes
   * no promise for each: on Node 20 every promise runs AsyncLocalStorage's hooks.
   */
  writeOrWait(res: Res): Promise<void> | undefined;
  readonly signal: AbortSignal;
}

const rpcDuration = histogram(METRICS.rpcDuration);

/** What both unary and streaming server calls offer. */
type SurfaceCall = Pick<ServerUnaryCall<unknown, unknown>, "metadata" | "cancelled" | "getDeadline" | "once">;

/** Wraps `fn` as a grpc-js unary handler. `name` is the span name: "metaharness.v1.SessionLog/GetSession". */
export function unary<Req, Res>(
  name: string,
  logger: Logger,
  fn: (req: Req, ctx: CallContext) => Promise<Res>,
): handleUnaryCall<Req, Res> {
  const attributes = rpcAttributes(name);
  return (call, callback) => {
    runCall(name, attributes, logger, call, call.request, {
      body: async (ctx) => callback(null, await fn(call.request, ctx)),
      fail: (status) => callback(status),
    });
  };
}

/** Wraps `fn` as a grpc-js server-streaming handler; the stream ends when `fn` resolves. */
export function serverStream<Req, Res>(
  name: string,
  logger: Logger,
  fn: (req: Req, stream: ServerStreamWriter<Res>, ctx: CallContext) => Promise<void>,
): handleServerStreamingCall<Req, Res> {
  const attributes = rpcAttributes(name);
  return (call) => {
    runCall(name, attributes, logger, call, call.request, {
      body: async (ctx) => {
        const writer: ServerStreamWriter<Res> = {
          signal: ctx.signal,
          write: (res) => writeWithBackpressure(call, res, ctx.signal) ?? Promise.resolve(),
          writeOrWait: (res) => writeWithBackpressure(call, res, ctx.signal),
        };
        await fn(call.request, writer, ctx);
        call.end();
      },
      fail: (status) => call.emit("error", status),
    });
  };
}

interface CallHooks {
  readonly body: (ctx: CallContext) => Promise<void>;
  readonly fail: (status: StatusError) => void;
}

/** `attributes`: the method's own (rpcAttributes), made once per method rather than per call. */
function runCall(name: string, attributes: Attributes, logger: Logger, call: SurfaceCall, request: unknown, hooks: CallHooks): void {
  const deadline = toDate(call.getDeadline());
  const cancellation = new CallCancellation(deadline);
  call.once("cancelled", () => cancellation.cancelled());

  const parent = extractFromMetadata(call.metadata, ROOT_CONTEXT);
  const started = performance.now();
  let status = "OK";
  // The span made active as withSpan would, without its wrapper: this function catches every
  // error itself (so withSpan's catch never ran) and ends the span, which spares a call an async
  // function, its await and their promises.
  const run = getTracer().startActiveSpan(
    name,
    { attributes: { ...attributes, ...sessionAttribute(request) }, kind: SpanKind.SERVER },
    parent,
    async (span): Promise<void> => {
      // Made on first use: most calls never log, and a pino child per call is a measurable share
      // of a small RPC's CPU (test/bench/append.ts).
      let child: Logger | undefined;
      const callLogger = (): Logger => (child ??= logger.child({ rpc: name }));
      const ctx: CallContext = {
        metadata: call.metadata,
        get signal() {
          return cancellation.signal;
        },
        get logger() {
          return callLogger();
        },
        deadline,
      };
      try {
        if (request instanceof UndecodableRequest) {
          throw new MhError("INVALID_ARGUMENT", `the request could not be decoded: ${request.reason}`, { field: request.field });
        }
        await hooks.body(ctx);
        span.setAttribute("rpc.grpc.status_code", 0);
      } catch (thrown) {
        const err = toMhError(thrown);
        status = err.code;
        span.setAttribute("rpc.grpc.status_code", err.codeNumber);
        if (call.cancelled) {
          callLogger().debug({ code: err.code }, "rpc ended after the client cancelled");
          return;
        }
        if (isServerFault(err)) {
          recordError(span, thrown);
          callLogger().error({ err: thrown, code: err.code }, "rpc failed");
        } else {
          callLogger().warn({ code: err.code, field: err.field, error: err.message }, "rpc failed");
        }
        hooks.fail(toStatusError(err, currentSpanIds()?.traceId));
      } finally {
        cancellation.finish();
        span.end();
        rpcDuration.record(secondsSince(started), { "rpc.system.name": "grpc", "rpc.method": name, "rpc.response.status_code": status });
      }
    },
  );
  run.catch((err: unknown) => logger.error({ err, rpc: name }, "rpc wrapper failed"));
}

/** Undefined when the transport took `res` and can take more; else resolves at its drain, or rejects if the call ended. */
function writeWithBackpressure<Res>(
  call: ServerWritableStream<unknown, Res>,
  res: Res,
  signal: AbortSignal,
): Promise<void> | undefined {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  if (call.write(res)) return undefined;
  return new Promise<void>((resolve, reject) => {
    const onDrain = (): void => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    };
    const onAbort = (): void => {
      call.off("drain", onDrain);
      reject(abortReason(signal));
    };
    call.once("drain", onDrain);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

function abortReason(signal: AbortSignal): MhError {
  return signal.reason instanceof MhError ? signal.reason : new MhError("CANCELLED", "the call was cancelled");
}

function toDate(deadline: Deadline): Date | undefined {
  if (deadline instanceof Date) return deadline;
  return Number.isFinite(deadline) ? new Date(deadline) : undefined;
}

/**
 * `mh.session_id` of a request with a `session_id` (ts-proto's `sessionId`), as the harness's
 * step spans carry it: a session's traces can be searched for, and the gateway shows a trace
 * only to the tenant owning every session named in it.
 */
function sessionAttribute(request: unknown): Attributes {
  const id = typeof request === "object" && request !== null && "sessionId" in request ? request.sessionId : undefined;
  return typeof id === "string" && id !== "" ? { "mh.session_id": id } : {};
}

/** OpenTelemetry RPC semantic-convention attributes for "pkg.Service/Method". */
function rpcAttributes(name: string): Attributes {
  const slash = name.lastIndexOf("/");
  return {
    "rpc.system": "grpc",
    "rpc.service": slash < 0 ? name : name.slice(0, slash),
    "rpc.method": slash < 0 ? name : name.slice(slash + 1),
  };
}
