/**
 * The structured logger every service uses: pino JSON lines on stdout carrying the service name,
 * the active span's trace_id/span_id on every line, and obvious secrets redacted. Per-session
 * context is added with child loggers (`loggerFor`), never by formatting it into messages.
 */
import { hostname } from "node:os";
import { pino, type DestinationStream, type Level, type Logger } from "pino";
import { currentSpanIds } from "@metaharness/telemetry";

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
  const options = {
    level: opts.level ?? "info",
    base: { service: opts.service, pid: process.pid, hostname: hostname() },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    serializers: { err: pino.stdSerializers.errWithCause },
    redact: { paths: [...REDACT_PATHS, ...(opts.redact ?? [])], censor: "[redacted]" },
    mixin: (_obj: object, _level: number, logger: Logger) => traceFields(logger),
  } satisfies pino.LoggerOptions;
  // pino's default stdout destination is flushed on process exit, so the lines logged just
  // before process.exit() at the end of a shutdown are not lost.
  return opts.destination === undefined ? pino(options) : pino(options, opts.destination);
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

/** A child logger carrying session id, event seq and trace id as `session_id`, `seq`, `trace_id`. */
export function loggerFor(base: Logger, ctx: LogContext): Logger {
  const bindings: Record<string, string | number> = {};
  if (ctx.sessionId !== undefined) bindings["session_id"] = ctx.sessionId;
  if (ctx.seq !== undefined) bindings["seq"] = typeof ctx.seq === "bigint" ? ctx.seq.toString() : ctx.seq;
  if (ctx.traceId !== undefined && ctx.traceId !== "") bindings["trace_id"] = ctx.traceId;
  const child: TraceBound = base.child(bindings);
  if (bindings["trace_id"] !== undefined) child[BOUND_TRACE_ID] = ctx.traceId;
  return child;
}
