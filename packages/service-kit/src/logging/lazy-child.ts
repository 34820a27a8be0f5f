/**
 * A child logger made at its first line written, not as the request or session it is for begins.
 * A pino child serialises its bindings at once (our logger redacts them first), and at warn a
 * request or a session writes no line unless something goes wrong: made eagerly, the gateway's
 * child per request was 0.6-0.8% of its busy samples through the SDK (98532e1) and the harness's
 * per woken session about 25 us of CPU (caac039), both on every turn's path (issue 31).
 *
 * Until a line comes at a level the parent writes, a line is dropped as the child would drop it
 * (a child takes its parent's level when made) and the level and level checks are the parent's;
 * that first line, or anything else asked of it (a level set, a child), makes the child, and from
 * then on everything is the child's: every line written is the one an eager child writes. A
 * child given a level of its own is made at once.
 */
import type { Bindings, ChildLoggerOptions, Level, LevelWithSilentOrString, LogFn } from "pino";

/** What code working for one request or session logs through: pino's levels, level check and children. */
export interface ContextLogger {
  level: LevelWithSilentOrString;
  fatal: LogFn;
  error: LogFn;
  warn: LogFn;
  info: LogFn;
  debug: LogFn;
  trace: LogFn;
  silent: LogFn;
  isLevelEnabled(level: LevelWithSilentOrString): boolean;
  child(bindings: Bindings, options?: ChildLoggerOptions): ContextLogger;
}

type LogArgs = [obj: unknown, msg?: string, ...args: unknown[]];

export class LazyChildLogger implements ContextLogger {
  private made: ContextLogger | undefined;

  /**
   * `parent.child(bindings, options)` is the child, made once; `onMade` is told of it as it is
   * made (loggerFor marks a child bound to a trace id there).
   */
  constructor(
    private readonly parent: ContextLogger,
    private readonly bindings: Bindings,
    private readonly options?: ChildLoggerOptions,
    private readonly onMade?: (child: ContextLogger) => void,
  ) {
    // A child with a level of its own drops lines by that level, which the parent cannot answer
    // for: made at once, it is an eager child, as it would be without this class.
    if (options?.level !== undefined) this.child_();
  }

  get level(): LevelWithSilentOrString {
    return this.made?.level ?? this.parent.level;
  }

  set level(level: LevelWithSilentOrString) {
    this.child_().level = level;
  }

  fatal(...args: LogArgs): void {
    this.write("fatal", args);
  }

  error(...args: LogArgs): void {
    this.write("error", args);
  }

  warn(...args: LogArgs): void {
    this.write("warn", args);
  }

  info(...args: LogArgs): void {
    this.write("info", args);
  }

  debug(...args: LogArgs): void {
    this.write("debug", args);
  }

  trace(...args: LogArgs): void {
    this.write("trace", args);
  }

  /** pino's `silent`: writes nothing. */
  silent(): void {}

  isLevelEnabled(level: LevelWithSilentOrString): boolean {
    return (this.made ?? this.parent).isLevelEnabled(level);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): ContextLogger {
    return this.child_().child(bindings, options);
  }

  /** A line at `level`: through the child, made for the first line the parent's level lets through. */
  private write(level: Level, args: LogArgs): void {
    if (this.made === undefined && !this.parent.isLevelEnabled(level)) return;
    this.child_()[level](...args);
  }

  /** The real child, made once. */
  private child_(): ContextLogger {
    if (this.made === undefined) {
      this.made = this.parent.child(this.bindings, this.options);
      this.onMade?.(this.made);
    }
    return this.made;
  }
}
