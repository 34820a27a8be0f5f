/**
 * The SSE writer on a real HTTP server and socket: frames sent in one turn of the event loop go
 * out as one write, in order, and ending the stream writes what was still waiting.
 */
import { createServer, request, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { SseWriter } from "./sse.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A server whose one response is handed to `use`; resolves with everything the client read. */
async function serve(use: (writer: SseWriter, res: ServerResponse) => Promise<void>): Promise<string> {
  const server = createServer((_req, res) => {
    const writer = new SseWriter(res);
    writer.open("req_test");
    void use(writer, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return new Promise<string>((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/" }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve(body));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("SseWriter", () => {
  it("writes the frames of one turn of the event loop at once, in order", async () => {
    const writes: string[] = [];
    const body = await serve(async (writer, res) => {
      const write = res.write.bind(res) as (chunk: string) => boolean;
      res.write = ((chunk: string) => {
        writes.push(chunk);
        return write(chunk);
      }) as typeof res.write;
      // Nothing to wait for while the socket takes what it is given: no promise per frame.
      expect(writer.send("user.message", { n: 1 }, 1)).toBeUndefined();
      expect(writer.send("event_delta", { n: 2 })).toBeUndefined();
      expect(writer.send("event_delta", { n: 3 })).toBeUndefined();
      await new Promise((r) => setImmediate(r));
      await writer.send("session.status_idle", { n: 4 }, 2);
      writer.end();
    });
    const frames = [
      'id: 1\nevent: user.message\ndata: {"n":1}\n\n',
      'event: event_delta\ndata: {"n":2}\n\n',
      'event: event_delta\ndata: {"n":3}\n\n',
      'id: 2\nevent: session.status_idle\ndata: {"n":4}\n\n',
    ];
    expect(body).toBe(frames.join(""));
    // The first three in one write; the last, sent after the loop turned, with the end.
    expect(writes).toEqual([frames.slice(0, 3).join("")]);
  });

  it("sends nothing after the response closed", async () => {
    const body = await serve(async (writer) => {
      await writer.send("user.message", { n: 1 }, 1);
      writer.end();
      await writer.send("user.message", { n: 2 }, 2);
      expect(writer.closed).toBe(true);
    });
    expect(body).toBe('id: 1\nevent: user.message\ndata: {"n":1}\n\n');
  });
});
