/**
 * Server-sent events on a raw Node response, framed exactly as the Messages API frames them:
 * `event: <type>\ndata: <json>\n\n`. Writes wait for `drain` when the socket is full, and become
 * no-ops once the client has gone (the caller's signal tells it to stop producing).
 */
import type { ServerResponse } from "node:http";
import type { ErrorBody } from "./api-error.js";
import type { StreamEvent } from "./wire.js";

export class SseWriter {
  readonly #res: ServerResponse;

  constructor(res: ServerResponse) {
    this.#res = res;
  }

  get closed(): boolean {
    return this.#res.destroyed || this.#res.writableEnded;
  }

  /** Sends the 200 status and SSE headers at once, before the first event. */
  open(requestId: string): void {
    this.#res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "request-id": requestId,
    });
    this.#res.flushHeaders();
  }

  send(event: StreamEvent | ErrorBody): Promise<void> {
    if (this.closed) return Promise.resolve();
    const frame = `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
    if (this.#res.write(frame)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.#res.off("drain", done);
        this.#res.off("close", done);
        resolve();
      };
      this.#res.on("drain", done);
      this.#res.on("close", done);
    });
  }

  end(): void {
    if (!this.closed) this.#res.end();
  }
}
