/**
 * The lean fetch (node-fetch.ts) fails as Node's built-in fetch did, so classify.ts makes the same
 * ModelError of it: a body cut off mid-stream is UNAVAILABLE, no headers within the timeout is
 * DEADLINE_EXCEEDED, a refused connection is UNAVAILABLE, a redirect is not followed, and a
 * status error keeps its body and retry-after. A raw server plays the broken model.
 */
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createModelClient } from "./client.js";
import { ModelError } from "./model-error.js";

const SSE_START =
  'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n' +
  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n' +
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}\n\n';

let server: http.Server;
let baseURL = "";
beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    const path = req.url ?? "";
    if (path.startsWith("/cut")) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(SSE_START, () => setImmediate(() => res.destroy()));
    } else if (path.startsWith("/slow")) {
      // Never answers: the client's timeout ends it (and closes the socket).
    } else if (path.startsWith("/redirect")) {
      res.writeHead(307, { location: "/elsewhere" }).end();
    } else {
      res.writeHead(529, { "content-type": "application/json", "retry-after": "2", "request-id": "req_9" });
      res.end('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}');
    }
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  server.close();
  await once(server, "close");
});

async function failure(path: string, timeoutMs = 60_000): Promise<ModelError> {
  const client = createModelClient({ baseURL: `${baseURL}/${path}`, apiKey: "k", model: "m", timeoutMs, retry: { maxAttempts: 1 } });
  const err = await client.streamMessage({ messages: [{ role: "user", content: "hi" }] }).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ModelError)) throw new Error(`expected a ModelError, got ${String(err)}`);
  return err;
}

describe("the lean fetch's failures", () => {
  it("a body cut off mid-stream: UNAVAILABLE, retryable", async () => {
    const err = await failure("cut");
    expect(err).toMatchObject({ code: "UNAVAILABLE", errorType: "model_request_failed_error", status: undefined });
    expect(err.message).toMatch(/^model stream broke off/);
    expect(err.retryable).toBe(true);
  });

  it("no headers within the timeout: DEADLINE_EXCEEDED", async () => {
    const err = await failure("slow", 100);
    expect(err).toMatchObject({ code: "DEADLINE_EXCEEDED" });
  });

  it("a status error keeps its body, request id and retry-after", async () => {
    const err = await failure("overloaded");
    expect(err).toMatchObject({ code: "UNAVAILABLE", status: 529, errorType: "model_overloaded_error", retryAfterMs: 2000, requestId: "req_9" });
    expect(err.message).toContain("Overloaded");
  });

  it("a redirect is not followed: a connection error", async () => {
    const err = await failure("redirect");
    expect(err).toMatchObject({ code: "UNAVAILABLE", status: undefined });
    expect(err.message).toMatch(/^cannot reach the model/);
  });

  it("a refused connection: UNAVAILABLE", async () => {
    const closed = http.createServer();
    closed.listen(0, "127.0.0.1");
    await once(closed, "listening");
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    await once(closed, "close");
    const client = createModelClient({ baseURL: `http://127.0.0.1:${port}`, apiKey: "k", model: "m", retry: { maxAttempts: 1 } });
    const err = await client.streamMessage({ messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "UNAVAILABLE" });
    expect((err as ModelError).message).toMatch(/^cannot reach the model/);
  });
});
