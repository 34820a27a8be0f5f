/**
 * Server-sent events on a raw Node response, framed as the SDK's decoder reads them: every
 * message has an `event:` line (the SDK skips messages without one) and JSON `data:`. Stored
 * events also carry `id: <seq>`, so a browser's EventSource resumes by itself with Last-Event-ID.
 * Heartbeats are `event: ping`, which the SDK skips. Writes wait for `drain` when the socket is
 * full, which holds the session log's stream back in turn: memory stays bounded per client.
 */
import type { ServerResponse } from "node:http";
import { streamOpened } from "../http/metrics.js";

export class SseWriter {
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

  send(event: string, data: unknown, id?: number): Promise<void> {
    const head = id === undefined ? "" : `id: ${id}\n`;
    return this.write(`${head}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  ping(): Promise<void> {
    return this.write('event: ping\ndata: {"type":"ping"}\n\n');
  }

  end(): void {
    if (!this.closed) this.res.end();
  }

  private write(frame: string): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.res.write(frame)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.res.off("drain", done);
        this.res.off("close", done);
        resolve();
      };
      this.res.on("drain", done);
      this.res.on("close", done);
    });
  }
}
