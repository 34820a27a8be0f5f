/**
 * The page's live stream against a scripted server: each connection resumes after the last seq
 * seen, an event replayed at the join is shown once, previews pass through, a terminated
 * session ends the stream, and a refused key stops it without retrying.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { UiEventJson } from "./wire.js";
import { LiveStream, type LiveHandlers, type LiveState } from "./live.js";

const frame = (event: string, data: unknown, id?: number): string => `${id === undefined ? "" : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const stored = (seq: number, type: string): UiEventJson =>
  ({ id: `sevt_${seq}`, type, processed_at: new Date(0).toISOString(), seq, session_id: "sesn_1" }) as UiEventJson;

function sse(...frames: string[]): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      // Cut mid-frame, as a network would.
      const bytes = new TextEncoder().encode(frames.join(""));
      controller.enqueue(bytes.slice(0, 7));
      controller.enqueue(bytes.slice(7));
      controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
}

function recorder(): { handlers: LiveHandlers; seen: string[]; states: LiveState[]; done: Promise<void> } {
  const seen: string[] = [];
  const states: LiveState[] = [];
  let finish = (): void => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    seen,
    states,
    done,
    handlers: {
      event: (e) => seen.push(`${e.seq} ${e.type}`),
      previewStart: (id, type) => seen.push(`start ${id} ${type}`),
      previewDelta: (id, text) => seen.push(`delta ${id} ${text}`),
      state(state) {
        states.push(state);
        if (state === "ended") finish();
      },
      fatal(error) {
        seen.push(`fatal ${error.status}`);
        finish();
      },
    },
  };
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("LiveStream", () => {
  it("resumes after the last seq seen, shows each event once, and ends with the session", async () => {
    const urls: string[] = [];
    const answers = [
      sse(frame("session.status_running", stored(3, "session.status_running"), 3), frame("event_start", { type: "event_start", event: { id: "r.block0", type: "agent.message" } }), frame("event_delta", { type: "event_delta", event_id: "r.block0", delta: { type: "content_delta", content: { type: "text", text: "Hi" }, index: 0 } }), frame("ping", { type: "ping" })),
      sse(frame("session.status_running", stored(3, "session.status_running"), 3), frame("agent.message", stored(4, "agent.message"), 4), frame("session.status_terminated", stored(5, "session.status_terminated"), 5)),
    ];
    vi.stubGlobal("fetch", (url: string, init: RequestInit) => {
      urls.push(url);
      expect(new Headers(init.headers).get("accept")).toBe("text/event-stream");
      return Promise.resolve(answers.shift() ?? new Response(null, { status: 500 }));
    });
    const r = recorder();
    new LiveStream("sesn_1", 2, r.handlers).start();
    await r.done;
    expect(r.seen).toEqual(["3 session.status_running", "start r.block0 agent.message", "delta r.block0 Hi", "4 agent.message", "5 session.status_terminated"]);
    expect(urls.map((u) => new URL(u, "http://gw").searchParams.get("after_seq"))).toEqual(["2", "3"]);
    expect(new URL(urls[0]!, "http://gw").searchParams.getAll("event_deltas[]")).toEqual(["agent.message", "agent.thinking"]);
    expect(r.states).toContain("reconnecting");
    expect(r.states.at(-1)).toBe("ended");
  });

  it("stops at a refused key instead of retrying", async () => {
    const fetch = vi.fn(() => Promise.resolve(new Response(JSON.stringify({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } }), { status: 401 })));
    vi.stubGlobal("fetch", fetch);
    const r = recorder();
    new LiveStream("sesn_1", 0, r.handlers).start();
    await r.done;
    expect(r.seen).toEqual(["fatal 401"]);
    expect(fetch).toHaveBeenCalledTimes(1);
  });
});
