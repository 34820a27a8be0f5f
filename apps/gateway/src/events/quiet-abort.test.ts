/**
 * quietAbort on a real HTTP server: a client that leaves an open response gets its request
 * destroyed with Node's `aborted` error, made without a stack; the limit is back as the
 * response's `close` listeners run, and a stream that ends on its own leaves no listener behind.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { quietAbort } from "./quiet-abort.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

interface Left {
  /** The error the server destroyed the request with. */
  readonly error: Error | undefined;
  /** Error.stackTraceLimit as the response's own close listener ran. */
  readonly limitAtClose: number;
}

/** A server whose one response stays open (quiet or not) until the client, which reads its head, leaves. */
async function clientLeaves(quiet: boolean): Promise<Left> {
  let opened: ((res: ServerResponse) => void) | undefined;
  const seen = new Promise<Left>((resolve) => {
    opened = (res) => {
      const req = res.req;
      const destroy = req.destroy.bind(req);
      let error: Error | undefined;
      req.destroy = (err?: Error): IncomingMessage => {
        error = err;
        return destroy(err);
      };
      if (quiet) quietAbort(res);
      res.once("close", () => resolve({ error, limitAtClose: Error.stackTraceLimit }));
    };
  });
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.flushHeaders();
    opened?.(res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  const client = request({ host: "127.0.0.1", port, path: "/" }, () => client.destroy());
  client.on("error", () => undefined);
  client.end();
  return seen;
}

describe("quietAbort", () => {
  it("makes the aborted error of a client's going without a stack, the limit back for the response's close", async () => {
    const limit = Error.stackTraceLimit;
    const loud = await clientLeaves(false);
    expect(loud.error?.message).toBe("aborted");
    expect(loud.error?.stack).toContain("\n    at ");

    const quiet = await clientLeaves(true);
    expect(quiet.error?.message).toBe("aborted");
    expect(quiet.error?.stack).toBe("Error: aborted");
    expect(quiet.limitAtClose).toBe(limit);
    expect(Error.stackTraceLimit).toBe(limit);
  });

  it("takes its listeners off when the stream ends with the connection open", async () => {
    let counted: ((counts: unknown[]) => void) | undefined;
    const counts = new Promise<unknown[]>((resolve) => (counted = resolve));
    const server = createServer((_req, res) => {
      const count = (): number[] => [res.socket?.listenerCount("close") ?? -1, res.listenerCount("close")];
      const before = count();
      quietAbort(res)();
      counted?.([before, count()]);
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as AddressInfo;
    request({ host: "127.0.0.1", port, path: "/" }, (res) => res.resume()).end();
    const [before, after] = await counts;
    expect(after).toEqual(before);
  });
});
