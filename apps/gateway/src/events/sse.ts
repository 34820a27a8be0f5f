/**
 * Server-sent events on a raw Node response, framed as the SDK's decoder reads them: every
 * message has an `event:` line (the SDK skips messages without one) and JSON `data:`. Stored
 * events also carry `id: <seq>`, so a browser's EventSource resumes by itself with Last-Event-ID.
 * Heartbeats are `event: ping`, which the SDK skips. Writes wait for `drain` when the socket is
 * full, which holds the session log's stream back in turn: memory stays bounded per client.
 *
 * Frames are written together once per turn of the event loop (setImmediate): the log's
 * messages read from one TCP segment each reach the pump in a callback of its own, so without
 * this every token delta was a write syscall and an HTTP chunk of its own (16 of a text-only
 * turn's 25 frames, issue 31). The bytes are the same; what changes is how many writes carry them.
 */
import type { ServerResponse } from "node:http";
import { streamOpened } from "../http/metrics.js";

export class SseWriter {
  /** Frames not yet written, and whether a write of them is scheduled. */
  private pending: string[] = [];
  private scheduled = false;
  /** While the socket is full: resolved at its drain (or close). */
  private full: Promise<void> | undefined;

  constructor(private readonly res: ServerResponse) {}

  get closed(): boolean {
    return this.res.destroyed || this.res.writableEnded;
  }

  open(requestId: string): void {
    this.res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-accel-buffering": "no",
      "request-id": requestId,
    });
    this.res.flushHeaders();
    streamOpened(this.res);
  }

  /**
   * Queues a frame. Undefined when the caller may go on at once (nearly always: most frames of a
   * turn are written together), else a promise of the socket's drain: a frame costs no promise
   * and no await of its own (each one a promise hook's work too, with the tracer's context).
   */
  send(event: string, data: unknown, id?: number): Promise<void> | undefined {
    const head = id === undefined ? "" : `id: ${id}\n`;
    return this.write(`${head}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  ping(): Promise<void> | undefined {
    return this.write('event: ping\ndata: {"type":"ping"}\n\n');
  }

  /** Ends the response after the frames not yet written. */
  end(): void {
    if (this.closed) return;
    const rest = this.take();
    if (rest === "") this.res.end();
    else this.res.end(rest);
  }

  /** Undefined unless the socket is full, then its drain: the caller reads no further meanwhile. */
  private write(frame: string): Promise<void> | undefined {
    if (this.closed) return undefined;
    this.pending.push(frame);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return this.full;
  }

  private take(): string {
    const out = this.pending.length === 1 ? (this.pending[0] ?? "") : this.pending.join("");
    this.pending = [];
    return out;
  }

  private flush(): void {
    this.scheduled = false;
    if (this.closed || this.pending.length === 0) return;
    if (this.res.write(this.take()) || this.full !== undefined) return;
    this.full = new Promise((resolve) => {
      const done = (): void => {
        this.res.off("drain", done);
        this.res.off("close", done);
        this.full = undefined;
        resolve();
      };
      this.res.on("drain", done);
      this.res.on("close", done);
    });
  }
}
