/**
 * The one place the CLI writes to the terminal. Commands get an `Output` and never touch
 * process.stdout/stderr themselves, so tests can capture what a command printed, and whether
 * spinners and colours are used is decided once, from the terminal and NO_COLOR.
 */

export interface Output {
  /** A line on stdout. */
  line(text?: string): void;
  /** Text on stdout as it is, without a newline (streamed tokens, spinner frames). */
  write(text: string): void;
  /** A line on stderr (problems, and notes that must not mix with piped output). */
  error(text: string): void;
  /** stdout is a terminal: spinners and rewriting the current line are allowed. */
  readonly tty: boolean;
  /** ANSI colours are allowed. */
  readonly color: boolean;
  /** The terminal's width in columns (COLUMNS, or 160, for a pipe). */
  readonly columns: number;
}

export function terminalOutput(env: NodeJS.ProcessEnv = process.env): Output {
  const tty = process.stdout.isTTY;
  // A reader that leaves (`mh sessions ls | head -1`) closes the pipe: stdout errors with EPIPE,
  // which crashed the CLI with a stack trace. It is taken as the user's stop instead: nothing
  // more is written, and SIGTERM runs the command's own way out (an embedded stack is stopped).
  let closed = false;
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code !== "EPIPE") throw err;
    if (closed) return;
    closed = true;
    process.kill(process.pid, "SIGTERM");
  });
  const write = (text: string): void => {
    if (!closed) process.stdout.write(text);
  };
  return {
    line: (text = "") => write(`${text}\n`),
    write,
    error: (text) => void process.stderr.write(`${text}\n`),
    tty,
    color: tty && (env["NO_COLOR"] ?? "") === "" && env["TERM"] !== "dumb",
    // A pipe has no width; lines then get room enough to be read in a log.
    get columns() {
      return tty && process.stdout.columns > 0 ? process.stdout.columns : Number(env["COLUMNS"] ?? 0) || 160;
    },
  };
}

/** An Output that keeps everything, for tests. */
export interface CapturedOutput extends Output {
  readonly stdout: () => string;
  readonly stderr: () => string;
}

export function captureOutput(opts: { tty?: boolean; color?: boolean; columns?: number } = {}): CapturedOutput {
  let out = "";
  let err = "";
  return {
    line: (text = "") => {
      out += `${text}\n`;
    },
    write: (text) => {
      out += text;
    },
    error: (text) => {
      err += `${text}\n`;
    },
    tty: opts.tty ?? false,
    color: opts.color ?? false,
    columns: opts.columns ?? 100,
    stdout: () => out,
    stderr: () => err,
  };
}
