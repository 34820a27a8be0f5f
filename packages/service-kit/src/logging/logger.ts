/**
 * The structured logger every service uses: pino JSON lines on stdout carrying the service name,
 * the active span's trace_id/span_id on every line, and obvious secrets redacted. Per-session
 * context is added with child loggers (`loggerFor`), never by formatting it into messages.
 */
import { hostname } from "node:os";
import { pino, type DestinationStream, type Level, type Logger } from "pino";
import { currentSpanIds } from "@metaharness/telemetry";
import { LazyChildLogger, type ContextLogger } from "./lazy-child.js";
import { redactor } from "./redact.js";

export type { Logger } from "pino";
export type LogLevel = Level | "silent";

export interface LoggerOptions {
  readonly service: string;
  readonly level?: LogLevel;
  /** Where lines go; stdout by default. Tests pass a stream to capture them. */
  readonly destination?: DestinationStream;
  /** Paths to redact on top of `REDACTED_KEYS` (pino path syntax: `"body.apiKey"`). */
  readonly redact?: readonly string[];
}

/** Field names whose values never reach a log line, at the top level or one object deep. */
export const REDACTED_KEYS: readonly string[] = [
  "token",
  "access_token",
  "refresh_token",
  "client_secret",
  "password",
  "authorization",
  "Authorization",
  "accessToken",
  "refreshToken",
  "clientSecret",
];

const REDACT_PATHS = [
  ...REDACTED_KEYS,
  ...REDACTED_KEYS.map((k) => `*.${k}`),
  ...REDACTED_KEYS.map((k) => `*.headers.${k}`),
];

/** Marks a child logger bound to an explicit trace id (see `loggerFor`); inherited by its children. */
const BOUND_TRACE_ID: unique symbol = Symbol("mh.boundTraceId");
type TraceBound = Logger & { [BOUND_TRACE_ID]?: string };

export function createLogger(opts: LoggerOptions): Logger {
  const redact = redactor([...REDACT_PATHS, ...(opts.redact ?? [])]);
  const options = {
    level: opts.level ?? "info",
    base: { service: opts.service, pid: process.pid, hostname: hostname() },
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: (err: Error) => redact({ err: pino.stdSerializers.errWithCause(err) }).err },
    // Redacted here rather than by pino's `redact`, which parsed its paths again for every value
    // of every line (redact.ts): a line's own fields here, a child's bindings in `child` below.
    formatters: { level: (label) => ({ level: label }), log: (o) => redact(o) },
    mixin: (_obj: object, _level: number, logger: Logger) => traceFields(logger),
  } satisfies pino.LoggerOptions;
  // pino's default stdout destination is flushed on process exit, so the lines logged just
  // before process.exit() at the end of a shutdown are not lost.
  const logger = opts.destination === undefined ? pino(options) : pino(options, opts.destination);
  // Children inherit this (a child is made with the parent as its prototype), grandchildren too;
  // pino gives a child's bindings no formatter of the root's.
  type Child = (this: Logger, bindings: pino.Bindings, options?: pino.ChildLoggerOptions) => Logger;
  const pinoChild = (Object.getPrototypeOf(logger) as { child: Child }).child;
  const redactedChild: Child = function (this: Logger, bindings, childOptions) {
    return pinoChild.call(this, redact(bindings), childOptions);
  };
  Object.defineProperty(logger, "child", { value: redactedChild, writable: true, configurable: true });
  return logger;
}

/** The active span's ids, unless the logger is bound to an explicit trace id already. */
function traceFields(logger: TraceBound): Record<string, string> {
  const ids = currentSpanIds();
  if (ids === undefined) return {};
  const bound = logger[BOUND_TRACE_ID];
  if (bound === undefined) return { trace_id: ids.traceId, span_id: ids.spanId };
  return bound === ids.traceId ? { span_id: ids.spanId } : {};
}

export interface LogContext {
  readonly sessionId?: string | undefined;
  readonly seq?: number | bigint | string | undefined;
  /** For work outside any span that still belongs to a trace (e.g. an event's trace_context). */
  readonly traceId?: string | undefined;
}

/**
 * A child logger carrying session id, event seq and trace id as `session_id`, `seq`, `trace_id`,
 * made at its first line written (lazy-child.ts): the harness makes one per session it wakes.
 */
export function loggerFor(base: Logger, ctx: LogContext): ContextLogger {
  const bindings: Record<string, string | number> = {};
  if (ctx.sessionId !== undefined) bindings["session_id"] = ctx.sessionId;
  if (ctx.seq !== undefined) bindings["seq"] = typeof ctx.seq === "bigint" ? ctx.seq.toString() : ctx.seq;
  const traceId = ctx.traceId;
  if (traceId === undefined || traceId === "") return new LazyChildLogger(base, bindings);
  bindings["trace_id"] = traceId;
  // The child made is base's, a pino logger: marked, it and its own children leave out the
  // span's trace id when it is this one (traceFields).
  return new LazyChildLogger(base, bindings, undefined, (child) => {
    (child as TraceBound)[BOUND_TRACE_ID] = traceId;
  });
}
