/**
 * The broker's end of one sandbox's pipe: numbers requests, matches replies, and turns every
 * way the other end can fail (process gone, garbage on the pipe, no answer in time) into a
 * rejection the caller can report, so a dead or wedged sandbox never hangs a call.
 */
import type { Readable, Writable } from "node:stream";
import {
  FrameSplitter,
  decodeReply,
  encodeRequest,
  type AgentReply,
  type AgentRequest,
  type FileResult,
  type GetRequest,
  type PutRequest,
  type RunRequest,
  type RunResult,
  type WriteResult,
} from "./frames.js";

/** A call could not complete because the sandbox is gone; `reason` says why, for the model. */
export class SandboxGoneError extends Error {
  override readonly name = "SandboxGoneError";
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** Headroom over a call's own timeout before the broker decides the agent stopped answering. */
export const BACKSTOP_MS = 5_000;
/** File requests have no timeout of their own; the agent answers them from its main loop. */
const FILE_BACKSTOP_MS = 30_000;

interface Hello {
  readonly pid: number;
  readonly version: string;
}

type Pending =
  | { readonly type: "done"; resolve(r: RunResult): void; reject(e: Error): void; timer: NodeJS.Timeout }
  | { readonly type: "file"; resolve(r: FileResult): void; reject(e: Error): void; timer: NodeJS.Timeout }
  | { readonly type: "written"; resolve(r: WriteResult): void; reject(e: Error): void; timer: NodeJS.Timeout };

export interface AgentChannelOptions {
  readonly stdin: Writable;
  readonly stdout: Readable;
  /** The agent broke the protocol or stopped answering: the owner should kill the sandbox. */
  readonly onFault: (reason: string) => void;
}

export class AgentChannel {
  readonly ready: Promise<Hello>;
  private readonly pending = new Map<number, Pending>();
  private readonly splitter = new FrameSplitter();
  private nextId = 1;
  private gone: SandboxGoneError | undefined;
  private settleHello: { resolve(h: Hello): void; reject(e: Error): void } | undefined;

  constructor(private readonly opts: AgentChannelOptions) {
    this.ready = new Promise<Hello>((resolve, reject) => (this.settleHello = { resolve, reject }));
    // Nobody may be awaiting `ready` when the sandbox dies (a pooled one); that is not unhandled.
    this.ready.catch(() => undefined);
    opts.stdout.on("data", (chunk: Buffer) => this.onData(chunk));
    // EPIPE when the sandbox died first: the exit handler reports it, with its reason.
    opts.stdin.on("error", () => undefined);
    opts.stdout.on("error", () => undefined);
  }

  /** Runs a process; aborting `signal` kills its process group (the reply still arrives). */
  run(body: RunRequest, signal?: AbortSignal): Promise<RunResult> {
    const id = this.nextId;
    const reply = this.request("done", { type: "run", body }, body.timeoutMs + body.graceMs + BACKSTOP_MS);
    if (signal !== undefined) {
      const cancel = (): void => {
        if (this.gone === undefined && this.pending.has(id)) {
          this.opts.stdin.write(encodeRequest(0, { type: "cancel", body: { target: id } }));
        }
      };
      if (signal.aborted) cancel();
      else {
        signal.addEventListener("abort", cancel, { once: true });
        reply.then(
          () => signal.removeEventListener("abort", cancel),
          () => signal.removeEventListener("abort", cancel),
        );
      }
    }
    return reply;
  }

  get(body: GetRequest): Promise<FileResult> {
    return this.request("file", { type: "get", body }, FILE_BACKSTOP_MS);
  }

  put(body: PutRequest): Promise<WriteResult> {
    return this.request("written", { type: "put", body }, FILE_BACKSTOP_MS);
  }

  /** Fails every call in flight and every later one with `reason`. Idempotent. */
  close(reason: string): void {
    if (this.gone !== undefined) return;
    this.gone = new SandboxGoneError(reason);
    this.settleHello?.reject(this.gone);
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(this.gone);
    }
    this.pending.clear();
    this.opts.stdin.destroy();
  }

  get inFlight(): number {
    return this.pending.size;
  }

  private request(type: "done", req: AgentRequest, backstopMs: number): Promise<RunResult>;
  private request(type: "file", req: AgentRequest, backstopMs: number): Promise<FileResult>;
  private request(type: "written", req: AgentRequest, backstopMs: number): Promise<WriteResult>;
  private request(type: Pending["type"], req: AgentRequest, backstopMs: number): Promise<unknown> {
    if (this.gone !== undefined) return Promise.reject(this.gone);
    const id = this.nextId;
    this.nextId = this.nextId >= 0xfffffff0 ? 1 : this.nextId + 1;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.opts.onFault(`the sandbox stopped answering (no reply to a ${req.type} request in ${backstopMs} ms)`);
      }, backstopMs);
      timer.unref();
      this.pending.set(id, { type, resolve, reject, timer });
      this.opts.stdin.write(encodeRequest(id, req));
    });
  }

  private onData(chunk: Buffer): void {
    let payloads: Buffer[];
    try {
      payloads = this.splitter.push(chunk);
    } catch (err) {
      this.opts.onFault(`the sandbox broke the protocol: ${(err as Error).message}`);
      return;
    }
    for (const payload of payloads) {
      let reply: AgentReply;
      try {
        reply = decodeReply(payload);
      } catch (err) {
        this.opts.onFault(`the sandbox broke the protocol: ${(err as Error).message}`);
        return;
      }
      this.dispatch(reply);
    }
  }

  private dispatch(reply: AgentReply): void {
    if (reply.type === "hello") {
      this.settleHello?.resolve({ pid: reply.pid, version: reply.version });
      return;
    }
    const p = this.pending.get(reply.id);
    if (p === undefined || p.type !== reply.type) {
      this.opts.onFault(`the sandbox answered a request it was not asked (id ${reply.id})`);
      return;
    }
    this.pending.delete(reply.id);
    clearTimeout(p.timer);
    // The type check above pairs each reply with its own pending kind.
    (p.resolve as (r: unknown) => void)(reply.result);
  }
}
