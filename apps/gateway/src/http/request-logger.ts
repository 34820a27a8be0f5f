/**
 * A request's logger (`req.log`), made as its first line is written rather than as the request
 * arrives. fastify makes a child of the service's logger for every request, carrying its
 * `request_id`: pino serialises the bindings at once and our logger redacts them first, 0.8% of
 * the gateway's busy samples through the SDK at warn, where no request writes a line unless it
 * fails (issue 31). The child is made, with the same bindings and options, the first time a
 * method is called at a level the parent writes, so every line written is the line it was; at
 * info, where each request's access line is written, it is made at that line.
 */
import type { FastifyBaseLogger } from "fastify";
import type { Bindings, ChildLoggerOptions, Level, LevelWithSilentOrString, LogFn } from "pino";

/** What the parent must tell us: whether a level is written (pino's loggers do). */
interface LevelAware extends FastifyBaseLogger {
  isLevelEnabled(level: Level): boolean;
}

function levelAware(logger: FastifyBaseLogger): logger is LevelAware {
  return typeof (logger as Partial<LevelAware>).isLevelEnabled === "function";
}

type LogArgs = [obj: unknown, msg?: string, ...args: unknown[]];

class LazyChildLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: LevelAware,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  get level(): LevelWithSilentOrString {
    return this.made?.level ?? this.parent.level;
  }

  set level(level: LevelWithSilentOrString) {
    this.child_().level = level;
  }

  // The six levels' methods, on the prototype (below the class): one write each.
  declare fatal: LogFn;
  declare error: LogFn;
  declare warn: LogFn;
  declare info: LogFn;
  declare debug: LogFn;
  declare trace: LogFn;

  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.child_().child(bindings, options);
  }

  /** A line at `level`: through the child, made for the first line the parent's level lets through. */
  write(level: Level, args: LogArgs): void {
    if (this.made === undefined && !this.parent.isLevelEnabled(level)) return;
    this.child_()[level](...args);
  }

  /** The real child, made once. */
  private child_(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }
}

for (const level of ["fatal", "error", "warn", "info", "debug", "trace"] as const) {
  LazyChildLogger.prototype[level] = function (this: LazyChildLogger, ...args: LogArgs): void {
    this.write(level, args);
  };
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
