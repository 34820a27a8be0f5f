/**
 * What a client outside this process (the Python SDK's scenarios) reads, recorded for the
 * conformance check like the TypeScript SDK's: a pass-through HTTP server on port 0 in front of
 * the gateway, each exchange going through recordingFetch (recorder.ts). Only started while
 * recording (MH_CONFORMANCE_DIR); otherwise the client talks to the gateway directly.
 */
import { createServer, type IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import { recording, recordingFetch } from "./recorder.js";

export interface RecordingProxy {
  /** Where the client should send its requests: the proxy, or the gateway when not recording. */
  readonly url: string;
  close(): Promise<void>;
}

/** Request headers that describe one hop, not the request: the proxy's own fetch sets them. */
const HOP_HEADERS = new Set(["host", "connection", "content-length", "transfer-encoding", "keep-alive", "accept-encoding"]);
/** Response headers the proxy's fetch made untrue (it decoded the body and streams it anew). */
const STALE_HEADERS = new Set(["content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive"]);

async function bodyOf(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return chunks.length === 0 ? undefined : Buffer.concat(chunks);
}

export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  if (!recording()) return { url: target, close: () => Promise.resolve() };
  const send = recordingFetch(fetch);
  const server = createServer((req, res) => {
    void (async () => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined && !HOP_HEADERS.has(name)) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
      }
      const answer = await send(new URL(req.url ?? "/", target), { method: req.method ?? "GET", headers, body: await bodyOf(req) });
      const out: Record<string, string> = {};
      answer.headers.forEach((value, name) => {
        if (!STALE_HEADERS.has(name)) out[name] = value;
      });
      res.writeHead(answer.status, out);
      if (answer.body === null) res.end();
      else Readable.fromWeb(answer.body).pipe(res);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(`recording proxy: ${String(err)}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
