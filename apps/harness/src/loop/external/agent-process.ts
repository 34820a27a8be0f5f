/**
 * One external agent process and its two pipes. Lines out of its stdout are split and bounded here
 * (a line longer than the limit is a protocol failure, never unbounded memory; a flood of lines
 * pauses the pipe), and each `next()` waits for one line at most the silence timeout and at most until
 * the caller's signal aborts. The process runs in its own process group, without a shell and with a
 * minimal environment (no credentials of the harness), and `stop()` is idempotent: close stdin,
 * then SIGTERM, then SIGKILL to the whole group.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { MhError } from "@metaharness/errors";
import { AgentProcessError } from "./errors.js";
import { encode, parseAgentLine, type AgentLine, type HarnessMessage } from "./protocol.js";

const MAX_QUEUED_LINES = 64;
const STDERR_TAIL_CHARS = 2_000;
const STOP_GRACE_MS = 1_000;

export interface AgentProcessOptions {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly maxLineBytes: number;
}

export class AgentProcess {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly exited: Promise<void>;
  private readonly lines: string[] = [];
  private partial = "";
  private stderrTail = "";
  private failure: AgentProcessError | undefined;
  private waiter: (() => void) | undefined;
  private stopping: Promise<void> | undefined;

  constructor(private readonly opts: AgentProcessOptions) {
    const [command = "", ...args] = opts.argv;
    this.child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], env: { ...opts.env }, detached: true });
    this.exited = new Promise((resolve) => {
      this.child.once("close", (code, signal) => {
        const how = signal === null ? `with code ${code ?? "?"}` : `on ${signal}`;
        this.fail(new AgentProcessError("exited", `the agent process exited ${how}${this.stderrNote()}`));
        resolve();
      });
      this.child.once("error", (err) => {
        this.fail(new AgentProcessError("spawn", `the agent process could not be started: ${err.message}`, { cause: err }));
        if (this.child.pid === undefined) resolve();
      });
    });
    this.child.stdout.setEncoding("utf8");
    this.child.stdout.on("data", (chunk: string) => this.onStdout(chunk));
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL_CHARS);
    });
    // A write to a process that died fails with EPIPE; the close event reports it.
    this.child.stdin.on("error", () => undefined);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Writes one message; fails if the process is gone or does not read within `timeoutMs`. */
  async send(message: HarnessMessage, signal: AbortSignal, timeoutMs: number): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    const written = new Promise<void>((resolve, reject) => {
      this.child.stdin.write(encode(message), (err) => {
        if (err === null || err === undefined) resolve();
        else reject(this.failure ?? new AgentProcessError("exited", `the agent process stopped reading: ${err.message}`));
      });
    });
    await this.within(written, signal, timeoutMs, "read its input");
  }

  /** The next line the agent printed, parsed; throws AgentProcessError or CANCELLED. */
  async next(signal: AbortSignal, timeoutMs: number): Promise<AgentLine> {
    for (;;) {
      const line = this.lines.shift();
      if (line !== undefined) {
        if (this.lines.length < MAX_QUEUED_LINES / 2) this.child.stdout.resume();
        return parseAgentLine(line);
      }
      if (this.failure !== undefined) throw this.failure;
      const arrived = new Promise<void>((resolve) => (this.waiter = resolve));
      await this.within(arrived, signal, timeoutMs, "print anything");
    }
  }

  /** Ends the process: EOF first (a well-behaved agent exits), then SIGTERM, then SIGKILL. */
  stop(opts: { now?: boolean } = {}): Promise<void> {
    this.stopping ??= (async () => {
      if (opts.now !== true) {
        this.child.stdin.end();
        if (await settles(this.exited, STOP_GRACE_MS)) return;
        this.signalGroup("SIGTERM");
        if (await settles(this.exited, STOP_GRACE_MS)) return;
      }
      this.signalGroup("SIGKILL");
      await this.exited;
    })();
    return this.stopping;
  }

  private onStdout(chunk: string): void {
    this.partial += chunk;
    for (let i = this.partial.indexOf("\n"); i >= 0; i = this.partial.indexOf("\n")) {
      const line = this.partial.slice(0, i).replace(/\r$/, "");
      this.partial = this.partial.slice(i + 1);
      if (line.length > this.opts.maxLineBytes) return this.tooLong();
      if (line.trim() !== "") this.lines.push(line);
    }
    if (this.partial.length > this.opts.maxLineBytes) return this.tooLong();
    if (this.lines.length >= MAX_QUEUED_LINES) this.child.stdout.pause();
    this.wakeUp();
  }

  private tooLong(): void {
    this.partial = "";
    this.fail(new AgentProcessError("protocol", `the agent printed a line longer than ${this.opts.maxLineBytes} bytes`));
    this.signalGroup("SIGKILL");
  }

  private fail(err: AgentProcessError): void {
    this.failure ??= err;
    this.wakeUp();
  }

  private wakeUp(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }

  private stderrNote(): string {
    const tail = this.stderrTail.trim();
    return tail === "" ? "" : `; its stderr ends with: ${tail.slice(-500)}`;
  }

  private signalGroup(signal: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined || this.child.exitCode !== null || this.child.signalCode !== null) return;
    try {
      process.kill(-pid, signal); // the whole group: whatever the agent started goes too
    } catch {
      this.child.kill(signal);
    }
  }

  /** `p`, unless the signal aborts (CANCELLED) or `timeoutMs` passes (a timeout failure) first. */
  private async within<T>(p: Promise<T>, signal: AbortSignal, timeoutMs: number, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    void p.catch(() => undefined); // if the bounds win, a later failure of `p` is no one's to handle
    const bounds = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new AgentProcessError("timeout", `the agent did not ${what} within ${timeoutMs} ms`)), timeoutMs);
      onAbort = () => reject(new MhError("CANCELLED", "the turn was cancelled"));
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      return await Promise.race([p, bounds]);
    } finally {
      clearTimeout(timer);
      if (onAbort !== undefined) signal.removeEventListener("abort", onAbort);
    }
  }
}

async function settles(p: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
