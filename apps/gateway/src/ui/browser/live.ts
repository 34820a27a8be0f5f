/**
 * A session's events as they happen, from the gateway's own stream
 * (GET /v1/sessions/:id/events/stream), read with fetch so the API key travels as a header.
 * Each connection asks for the events after the last seq seen (`after_seq`), so a dropped
 * connection resumes with no gap and no duplicate; it also asks for token previews, so text
 * shows while the model writes it. Reconnects back off (capped, with jitter); a refused key or
 * a session that is gone stops it. The stream ends for good after `session.status_terminated`.
 */
import type { UiEventJson } from "./wire.js";
import { errorOf, headers, HttpError } from "./api.js";
import { SseParser } from "./sse.js";

export type LiveState = "connecting" | "live" | "reconnecting" | "ended" | "stopped";

export interface LiveHandlers {
  /** A stored event (with its seq), in seq order, each once. */
  event(event: UiEventJson): void;
  previewStart(id: string, type: string): void;
  previewDelta(id: string, text: string): void;
  state(state: LiveState, detail?: string): void;
  /** The stream cannot go on: the key was refused (401) or the session is gone (404). */
  fatal(error: HttpError): void;
}

// The page's own backoff, in the shape of @metaharness/errors' RetryPolicy (500 ms doubling to
// 10 s, half jitter): the page is served as plain modules with no bundler, so it imports types
// only, and no package's code reaches the browser.
const BACKOFF_FIRST_MS = 500;
const BACKOFF_MAX_MS = 10_000;

function backoff(attempt: number): number {
  const capped = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** Math.max(0, attempt - 1));
  return capped / 2 + Math.random() * (capped / 2);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

interface PreviewStart {
  event?: { id?: unknown; type?: unknown };
}
interface PreviewDelta {
  event_id?: unknown;
  delta?: { content?: { text?: unknown } };
}

export class LiveStream {
  private readonly stop = new AbortController();
  private terminated = false;

  constructor(
    private readonly sessionId: string,
    /** The last seq the page has; the stream starts after it. */
    private lastSeq: number,
    private readonly on: LiveHandlers,
  ) {}

  start(): void {
    void this.run();
  }

  close(): void {
    this.stop.abort();
    this.on.state("stopped");
  }

  private url(): string {
    const q = new URLSearchParams({ after_seq: String(this.lastSeq) });
    q.append("event_deltas[]", "agent.message");
    q.append("event_deltas[]", "agent.thinking");
    return `/v1/sessions/${encodeURIComponent(this.sessionId)}/events/stream?${q.toString()}`;
  }

  private async run(): Promise<void> {
    const signal = this.stop.signal;
    for (let attempt = 0; !signal.aborted; attempt++) {
      if (attempt > 0) {
        const wait = backoff(attempt);
        this.on.state("reconnecting", `retrying in ${(wait / 1000).toFixed(1)} s`);
        await sleep(wait, signal);
        if (signal.aborted) return;
      }
      this.on.state(attempt === 0 ? "connecting" : "reconnecting");
      try {
        const res = await fetch(this.url(), { headers: headers({ accept: "text/event-stream" }), cache: "no-store", signal });
        if (!res.ok) {
          const error = await errorOf(res);
          // 429 (too many streams) and 5xx are worth retrying; a refused key or a gone session is not.
          if (error.status === 429 || error.status >= 500) throw error;
          this.on.fatal(error);
          return;
        }
        if (res.body === null) throw new Error("the stream has no body");
        this.on.state("live");
        if (await this.read(res.body)) attempt = 0;
        if (this.terminated) {
          this.on.state("ended", "the session was terminated");
          return;
        }
      } catch (err) {
        if (signal.aborted) return;
        this.on.state("reconnecting", err instanceof Error ? err.message : String(err));
      }
    }
  }

  /** Reads one connection to its end; true when anything arrived (the backoff starts over). */
  private async read(body: ReadableStream<Uint8Array>): Promise<boolean> {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    const parser = new SseParser();
    let received = false;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return received;
        for (const message of parser.push(decoder.decode(value, { stream: true }))) {
          received = true;
          this.dispatch(message.event, message.data);
        }
      }
    } catch (err) {
      await reader.cancel().catch(() => undefined);
      throw err;
    }
  }

  private dispatch(type: string, data: string): void {
    if (type === "ping") return;
    const json: unknown = JSON.parse(data);
    if (type === "event_start") {
      const start = json as PreviewStart;
      if (typeof start.event?.id === "string" && typeof start.event.type === "string") this.on.previewStart(start.event.id, start.event.type);
      return;
    }
    if (type === "event_delta") {
      const delta = json as PreviewDelta;
      const text = delta.delta?.content?.text;
      if (typeof delta.event_id === "string" && typeof text === "string") this.on.previewDelta(delta.event_id, text);
      return;
    }
    if (type === "error") {
      const message = (json as { error?: { message?: unknown } }).error?.message;
      throw new HttpError(500, typeof message === "string" ? message : "the stream failed");
    }
    const event = json as UiEventJson;
    if (typeof event.seq !== "number" || event.seq <= this.lastSeq) return;
    this.lastSeq = event.seq;
    if (event.type === "session.status_terminated") this.terminated = true;
    this.on.event(event);
  }
}
