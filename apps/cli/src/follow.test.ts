/**
 * follow() against a server that speaks the stream's SSE framing and drops the first connection
 * mid-stream: the official SDK raises, follow reconnects with after_seq set to the last seq it
 * saw, skips what the server sends again, and ends after session.status_terminated.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { follow, seqOf } from "./client/follow.js";

let server: Server;
let client: Anthropic;
const asked: string[] = [];

function sse(seq: number, type = "agent.message"): string {
  const data = { id: `sevt_${seq}`, type, seq, session_id: "sesn_1", processed_at: new Date().toISOString(), content: [{ type: "text", text: `m${seq}` }] };
  return `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    asked.push(url.searchParams.get("after_seq") ?? "");
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (asked.length === 1) {
      // A dropped connection, not a clean end: once the three events are on their way, not before.
      res.write(sse(1) + sse(2) + sse(3), () => res.socket?.destroy());
      return;
    }
    res.end(sse(3) + "event: ping\ndata: {}\n\n" + sse(4) + sse(5, "session.status_terminated"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  client = new Anthropic({ apiKey: "k".repeat(20), baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, maxRetries: 0 });
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("follow", () => {
  it("resumes after a dropped connection with no gap and no duplicate", async () => {
    const seen: number[] = [];
    const reconnects: number[] = [];
    for await (const e of follow(client, "sesn_1", { afterSeq: 0, onReconnect: (n) => reconnects.push(n) })) {
      const seq = seqOf(e);
      if (seq !== undefined) seen.push(seq);
    }
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect(asked).toEqual(["0", "3"]);
    expect(reconnects).toEqual([1]);
  });
});
