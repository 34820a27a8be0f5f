/**
 * Handlers that authenticate and authorize before anything else runs: the caller's service token
 * (metadata `authorization`) must be known and its role among `allowed`, or the call ends with
 * UNAUTHENTICATED or PERMISSION_DENIED without touching the handler. The handler's context names
 * the caller, and so does its logger.
 */
import type { handleBidiStreamingCall, handleServerStreamingCall, handleUnaryCall } from "@grpc/grpc-js";
import { MhError } from "@metaharness/errors";
import { toMhError, toStatusError } from "../grpc/grpc-errors.js";
import { serverStream, unary, type CallContext, type ServerStreamWriter } from "../grpc/grpc-handlers.js";
import type { Logger } from "../logging/logger.js";
import type { Caller, ServiceTokens } from "./service-tokens.js";

export interface GuardedContext<R extends string> extends CallContext {
  readonly caller: Caller<R>;
}

export interface Guard<R extends string> {
  readonly tokens: ServiceTokens<R>;
  readonly logger: Logger;
}

function admit<R extends string>(guard: Guard<R>, allowed: readonly R[], name: string, metadata: Parameters<ServiceTokens<R>["callerOf"]>[0]): Caller<R> {
  const caller = guard.tokens.callerOf(metadata);
  if (!allowed.includes(caller.role)) {
    throw new MhError("PERMISSION_DENIED", `${caller.name} (role ${caller.role}) may not call ${name}`);
  }
  return caller;
}

/**
 * The call's context with its caller. The logger stays lazy, as runCall made it: spreading the
 * context would run its getter, and a pino child per call (two, here) is a measurable share of a
 * small RPC's CPU (test/bench/append.ts).
 */
function withCaller<R extends string>(ctx: CallContext, caller: Caller<R>): GuardedContext<R> {
  let child: Logger | undefined;
  return {
    metadata: ctx.metadata,
    // Read through: the call's signal is made when first asked for (grpc-handlers.ts).
    get signal() {
      return ctx.signal;
    },
    deadline: ctx.deadline,
    caller,
    get logger() {
      return (child ??= ctx.logger.child({ caller: caller.name }));
    },
  };
}

/** `unary` for callers whose role is in `allowed`. `name` is the full method name, as for `unary`. */
export function guardedUnary<Req, Res, R extends string>(
  name: string,
  guard: Guard<R>,
  allowed: readonly R[],
  fn: (req: Req, ctx: GuardedContext<R>) => Promise<Res>,
): handleUnaryCall<Req, Res> {
  // Not an async function: a refusal thrown here is a rejection of unary's own body, and the
  // handler's promise is returned as it is (no promise of its own, no await of the handler's).
  return unary<Req, Res>(name, guard.logger, (req, ctx) => fn(req, withCaller(ctx, admit(guard, allowed, name, ctx.metadata))));
}

/** `serverStream` for callers whose role is in `allowed`. */
export function guardedServerStream<Req, Res, R extends string>(
  name: string,
  guard: Guard<R>,
  allowed: readonly R[],
  fn: (req: Req, stream: ServerStreamWriter<Res>, ctx: GuardedContext<R>) => Promise<void>,
): handleServerStreamingCall<Req, Res> {
  // As guardedUnary's: a refusal thrown here rejects serverStream's own async body.
  return serverStream<Req, Res>(name, guard.logger, (req, stream, ctx) => fn(req, stream, withCaller(ctx, admit(guard, allowed, name, ctx.metadata))));
}

/** A bidirectional stream handler that only callers whose role is in `allowed` reach. */
export function guardedBidi<Req, Res, R extends string>(
  name: string,
  guard: Guard<R>,
  allowed: readonly R[],
  handler: (caller: Caller<R>) => handleBidiStreamingCall<Req, Res>,
): handleBidiStreamingCall<Req, Res> {
  return (call) => {
    let caller: Caller<R>;
    try {
      caller = admit(guard, allowed, name, call.metadata);
    } catch (err) {
      const refused = toMhError(err);
      guard.logger.warn({ rpc: name, code: refused.code, error: refused.message }, "rpc refused");
      call.emit("error", toStatusError(refused, undefined));
      return;
    }
    handler(caller)(call);
  };
}
