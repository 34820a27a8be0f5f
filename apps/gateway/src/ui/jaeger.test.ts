/**
 * The Jaeger client when Jaeger misbehaves, which the real Jaeger cannot be made to do on cue:
 * nothing listening, a server that never answers, error statuses, answers that are not a trace
 * or too large. Each is a catalog error in our own words (the real Jaeger's answers, a trace and
 * an unknown one, are tested in test/integration/ui/trace-page.test.ts).
 */
import { createServer, type Server } from "node:http";
import { createServer as createTcpServer, type AddressInfo, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ApiError } from "../errors/api-error.js";
import { JaegerQuery } from "./jaeger.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const stops: Array<() => Promise<void>> = [];

afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
});

/** An HTTP server answering every request with `status` and `body`; its base URL. */
async function answering(status: number, body: string): Promise<string> {
  const server: Server = createServer((_req, res) => res.writeHead(status, { "content-type": "application/json" }).end(body));
  stops.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function failure(query: JaegerQuery): Promise<ApiError> {
  const err = await query.trace(TRACE).then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

describe("JaegerQuery", () => {
  it("is unavailable (503) when nothing listens", async () => {
    const tcp = createTcpServer();
    await new Promise<void>((resolve) => tcp.listen(0, "127.0.0.1", resolve));
    const { port } = tcp.address() as AddressInfo;
    await new Promise<void>((resolve) => tcp.close(() => resolve()));
    const err = await failure(new JaegerQuery(`http://127.0.0.1:${port}`));
    expect([err.error, err.status]).toEqual(["unavailable", 503]);
    expect(err.message).toContain("MH_JAEGER_QUERY_URL");
  });

  it("times out (504) when Jaeger accepts but never answers", async () => {
    const sockets: Socket[] = [];
    const tcp = createTcpServer((socket) => sockets.push(socket)); // holds every connection open, silent
    stops.push(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => tcp.close(() => resolve()));
    });
    await new Promise<void>((resolve) => tcp.listen(0, "127.0.0.1", resolve));
    const started = Date.now();
    const err = await failure(new JaegerQuery(`http://127.0.0.1:${(tcp.address() as AddressInfo).port}`, { timeoutMs: 200 }));
    expect([err.error, err.status]).toEqual(["timeout", 504]);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("has no trace when Jaeger answers 404, or an empty list", async () => {
    expect(await new JaegerQuery(await answering(404, '{"data":null,"errors":[{"code":404,"msg":"trace not found"}]}')).trace(TRACE)).toBeUndefined();
    expect(await new JaegerQuery(await answering(200, '{"data":[]}')).trace(TRACE)).toBeUndefined();
  });

  it("is unavailable on an error status, without echoing Jaeger's message", async () => {
    const err = await failure(new JaegerQuery(await answering(500, '{"errors":[{"msg":"internal detail at /var/lib/x"}]}')));
    expect(err.error).toBe("unavailable");
    expect(err.message).not.toContain("internal detail");
    expect(String((err.cause as Error).message)).toContain("HTTP 500");
  });

  it("is unavailable when the answer is not JSON, or not a trace", async () => {
    expect((await failure(new JaegerQuery(await answering(200, "<html>jaeger</html>")))).error).toBe("unavailable");
    expect((await failure(new JaegerQuery(await answering(200, '{"data":[{"traceID":"x","spans":[{"spanID":1}],"processes":{}}]}')))).error).toBe("unavailable");
  });

  it("stops reading an answer over its size limit", async () => {
    const body = JSON.stringify({ data: [{ traceID: TRACE, spans: [], processes: {}, padding: "x".repeat(4096) }] });
    const err = await failure(new JaegerQuery(await answering(200, body), { maxBytes: 1024 }));
    expect(err.error).toBe("unavailable");
    expect(err.message).toMatch(/^The trace is over/);
  });
});
