/**
 * A request's logger (`req.log`), made as its first line is written rather than as the request
 * arrives (service-kit's LazyChildLogger, which says why). fastify makes a child of the service's
 * logger for every request, carrying its `request_id`; at info, the default, each request's
 * access line makes it then.
 */
import { LazyChildLogger, type ContextLogger } from "@metaharness/service-kit/logging";
import type { FastifyBaseLogger } from "fastify";
import type { Bindings, ChildLoggerOptions } from "pino";

/** A logger that says which levels it writes: pino's (whose children are pino's too). */
function levelAware(logger: FastifyBaseLogger): logger is FastifyBaseLogger & ContextLogger {
  return typeof (logger as Partial<ContextLogger>).isLevelEnabled === "function";
}

/**
 * fastify's `childLoggerFactory`: a lazy child of a pino logger; with options of its own (a
 * route's level or serializers, which change what the parent's level says) or a parent that
 * cannot say what it writes, the child at once, as fastify's own factory makes it.
 */
export function requestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  if (!levelAware(logger) || options.level !== undefined || options.serializers !== undefined) return logger.child(bindings, options);
  return new LazyChildLogger(logger, bindings, options);
}
