/**
 * Typed gRPC clients: every outgoing call carries the caller's trace context, calls return
 * Promises (or async iterables for server streams) with a deadline, and failures arrive as
 * MhError with the field and details the server put in its trailers. A client's calls go over
 * connections of its own that each stay inside the server's allowance of stream resets
 * (reset-guard.ts): a client may cancel as many calls as it likes.
 */
import { readFile } from "node:fs/promises";
import {
  InterceptingCall,
  Metadata,
  credentials as channelCredentials,
  type ChannelCredentials,
  type Client,
  type ClientOptions,
  type ClientReadableStream,
  type ClientUnaryCall,
  type CallOptions as GrpcCallOptions,
  type Interceptor,
  type ServiceDefinition,
  type ServiceError,
} from "@grpc/grpc-js";
import { MhError } from "@metaharness/errors";
import { injectIntoMetadata } from "@metaharness/telemetry";
import { fromServiceError, toMhError } from "./grpc-errors.js";
import { MAX_CLIENT_RECEIVE_MESSAGE_BYTES } from "./grpc-server.js";
import { ResetGuardedChannel } from "./reset-guard.js";
import { withoutStackTraces } from "./without-stack-traces.js";
import { installCheapAsyncResourceBind } from "./async-resource-bind.js";

/** Unary calls without an explicit deadline fail with DEADLINE_EXCEEDED after this long. */
export const DEFAULT_DEADLINE_MS = 30_000;

export interface CallOptions {
  /** Deadline from now; DEFAULT_DEADLINE_MS for unary calls, none for streams. */
  readonly deadlineMs?: number;
  readonly metadata?: Metadata;
  /** Aborting cancels the call; it then fails with CANCELLED. */
  readonly signal?: AbortSignal;
}

/** The constructor shape of ts-proto's clients, e.g. `SessionLogClient`. */
export type ClientConstructor<C extends Client> = new (
  address: string,
  credentials: ChannelCredentials,
  options?: Partial<ClientOptions>,
) => C;

export interface CreateClientOptions {
  /** Insecure by default: our services talk over a private network. */
  readonly credentials?: ChannelCredentials;
  /** Extra channel options, merged over the defaults. */
  readonly channelOptions?: Partial<ClientOptions>;
  /**
   * This service's own token, sent as `authorization: Bearer <token>` on every call (the
   * credential vault proxy tells its callers apart by it). See readServiceToken.
   */
  readonly bearerToken?: string;
}

/** Puts the trace context active when the call starts into its metadata. */
export const traceContextInterceptor: Interceptor = (options, nextCall) =>
  new InterceptingCall(nextCall(options), {
    start(metadata, listener, next) {
      next(injectIntoMetadata(metadata), listener);
    },
  });

/** A client of `ctor` (e.g. `SessionLogClient`) whose calls carry the trace context. */
export function createClient<C extends Client>(
  ctor: ClientConstructor<C>,
  address: string,
  opts: CreateClientOptions = {},
): C {
  installCheapAsyncResourceBind();
  const extra = opts.channelOptions ?? {};
  const own = opts.bearerToken === undefined ? traceContextInterceptor : traceAndBearerInterceptor(opts.bearerToken);
  return new ctor(address, opts.credentials ?? channelCredentials.createInsecure(), {
    "grpc.max_receive_message_length": MAX_CLIENT_RECEIVE_MESSAGE_BYTES,
    "grpc.keepalive_time_ms": 30_000,
    "grpc.keepalive_timeout_ms": 10_000,
    channelFactoryOverride: (target, credentials, options) => new ResetGuardedChannel(target, credentials, options),
    ...extra,
    interceptors: [own, ...(extra.interceptors ?? [])],
  });
}

/**
 * The trace context and `authorization: Bearer <token>` in one interceptor: each interceptor is
 * a layer of wrappers that every call builds and every message and status crosses.
 */
function traceAndBearerInterceptor(token: string): Interceptor {
  const authorization = `Bearer ${token}`;
  return (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        injectIntoMetadata(metadata).set("authorization", authorization);
        next(metadata, listener);
      },
    });
}

/**
 * A service token from the file that holds it (secrets are files, never settings); a missing or
 * empty file is FAILED_PRECONDITION naming the file, so a misdeployment fails at start.
 */
export async function readServiceToken(file: string): Promise<string> {
  let token: string;
  try {
    token = (await readFile(file, "utf8")).trim();
  } catch (err) {
    throw new MhError("FAILED_PRECONDITION", `the service token file ${file} cannot be read`, { cause: err });
  }
  if (token === "") throw new MhError("FAILED_PRECONDITION", `the service token file ${file} is empty`);
  return token;
}

/** The full-signature overload every generated unary method has. */
export type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<GrpcCallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => ClientUnaryCall;

/** Calls a generated unary method as a Promise: `await unaryCall(client.getSession.bind(client), req)`. */
export function unaryCall<Req, Res>(
  method: UnaryMethod<Req, Res>,
  request: Req,
  opts: CallOptions = {},
): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    const { signal } = opts;
    if (signal?.aborted === true) {
      reject(new MhError("CANCELLED", "the call was cancelled before it started"));
      return;
    }
    const onAbort = (): void => call.cancel();
    const call = withoutStackTraces(() =>
      method(
        request,
        opts.metadata ?? new Metadata(),
        { deadline: Date.now() + (opts.deadlineMs ?? DEFAULT_DEADLINE_MS) },
        (error, response) => {
          signal?.removeEventListener("abort", onAbort);
          if (error === null) resolve(response);
          else reject(fromServiceError(error));
        },
      ),
    );
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** What iterating a stream throws once its signal aborted. */
const STREAM_CANCELLED = new MhError("CANCELLED", "the call was cancelled");

/**
 * Iterates a server stream, converting its failure to MhError. The call starts at once (so it
 * carries the caller's trace context); leaving the loop or aborting the signal cancels it.
 */
export function streamCall<Res>(
  open: (metadata: Metadata, options: Partial<GrpcCallOptions>) => ClientReadableStream<Res>,
  opts: CallOptions = {},
): AsyncIterable<Res> {
  const options = opts.deadlineMs === undefined ? {} : { deadline: Date.now() + opts.deadlineMs };
  const call = withoutStackTraces(() => open(opts.metadata ?? new Metadata(), options));
  // The status of a call we cancel ourselves arrives as an 'error' after iteration ended.
  call.on("error", () => undefined);
  // grpc-js applies HTTP/2 flow control only once the stream has been read from; until then it
  // queues whatever the server sends without bound. Start reading now: the stream's own buffer
  // then fills to its high-water mark and the server is held back from there on.
  call.read(0);
  const onAbort = (): void => {
    // Ended now, with an error made once: left to the iteration's end, Node made an AbortError
    // (capturing and formatting its stack) for every stream cancelled this way, once a turn for
    // the harness's follow of its session. Destroyed before the cancel, so that the iteration
    // ends with it rather than with the cancel's status Error, made into an MhError of its own.
    call.destroy(STREAM_CANCELLED);
    call.cancel();
  };
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  if (opts.signal?.aborted === true) call.cancel();
  return iterateStream<Res>(call, () => {
    opts.signal?.removeEventListener("abort", onAbort);
    call.cancel();
  });
}

/**
 * The stream's own iterator (Node's, reading as the caller asks: backpressure as before), its
 * failure made an MhError and `finish` run once when it ends, fails or is left. An async
 * generator wrapping a `for await` of it did the same, at two more promises and an await per
 * message: the gateway's event streams and the harness's follows read every event and delta
 * through it (issue 31).
 */
function iterateStream<Res>(call: AsyncIterable<unknown>, finish: () => void): AsyncIterableIterator<Res> {
  const inner = call[Symbol.asyncIterator]();
  let finished = false;
  const end = (): void => {
    if (finished) return;
    finished = true;
    finish();
  };
  const ended = (result: IteratorResult<unknown>): IteratorResult<Res> => {
    if (result.done === true) end();
    return result as IteratorResult<Res>;
  };
  const failed = (err: unknown): never => {
    end();
    throw toMhError(err);
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    next: () => (finished ? Promise.resolve({ done: true, value: undefined }) : inner.next().then(ended, failed)),
    // Left early: the stream's iterator lets the stream go first, then the call is cancelled (as the generator's finally did).
    return: async (value?: unknown): Promise<IteratorResult<Res>> => {
      try {
        await inner.return?.();
      } finally {
        end();
      }
      return { done: true, value: value as Res };
    },
  };
}

type RequestOf<M> = M extends { requestSerialize: (value: infer Req) => Buffer } ? Req : never;
type ResponseOf<M> = M extends { responseDeserialize: (value: Buffer) => infer Res } ? Res : never;

/** Promise-returning methods for every unary and server-streaming method of a service definition. */
export type PromiseClient<S> = {
  readonly [K in keyof S as S[K] extends { requestStream: false } ? K : never]: S[K] extends {
    responseStream: true;
  }
    ? (request: RequestOf<S[K]>, opts?: CallOptions) => AsyncIterable<ResponseOf<S[K]>>
    : (request: RequestOf<S[K]>, opts?: CallOptions) => Promise<ResponseOf<S[K]>>;
};

/**
 * Promise-based methods over `client` for a ts-proto service definition:
 * `const log = promisify(createClient(SessionLogClient, addr), SessionLogService)`.
 * Client-streaming methods are left out.
 */
export function promisify<S extends ServiceDefinition>(client: Client, service: S): PromiseClient<S> {
  const methods: Record<string, (request: unknown, opts?: CallOptions) => unknown> = {};
  for (const [key, def] of Object.entries(service)) {
    if (def.requestStream) continue;
    const serialize = (value: unknown): Buffer => def.requestSerialize(value);
    const deserialize = (bytes: Buffer): unknown => def.responseDeserialize(bytes);
    methods[key] = def.responseStream
      ? (request, opts) =>
          streamCall(
            (md, options) => client.makeServerStreamRequest(def.path, serialize, deserialize, request, md, options),
            opts,
          )
      : (request, opts) =>
          unaryCall<unknown, unknown>(
            (req, md, options, cb) => client.makeUnaryRequest(def.path, serialize, deserialize, req, md, options, cb),
            request,
            opts,
          );
  }
  return methods as PromiseClient<S>;
}
