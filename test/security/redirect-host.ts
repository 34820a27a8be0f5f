/**
 * A host that sends every request elsewhere (307, to the same path on another host, 127.0.0.2,
 * which keeps method and body), and the other host, which records what reaches it. The attack
 * suite gives the first a git credential and an MCP credential: neither may reach the second.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Seen {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, unknown>;
  readonly body: string;
}

export interface RedirectHost {
  /** http://127.0.0.1:<port>, which redirects everything. */
  readonly url: string;
  /** Authorization headers the redirecting host received (it is the credentials' own host). */
  readonly authorizations: string[];
  /** What reached the host redirected to. */
  readonly elsewhere: Seen[];
  close(): Promise<void>;
}

const body = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
  });

const listen = (server: Server, host: string): Promise<number> =>
  new Promise((resolve) => server.listen(0, host, () => resolve((server.address() as AddressInfo).port)));

export async function startRedirectHost(): Promise<RedirectHost> {
  const authorizations: string[] = [];
  const elsewhere: Seen[] = [];
  const other = createServer((req, res) => {
    void body(req).then((text) => {
      elsewhere.push({ method: req.method ?? "", path: req.url ?? "", headers: { ...req.headers }, body: text });
      res.writeHead(404, { "content-type": "text/plain" }).end("nothing here\n");
    });
  });
  const otherPort = await listen(other, "127.0.0.2");
  const redirecting = createServer((req, res) => {
    if (req.headers.authorization !== undefined) authorizations.push(req.headers.authorization);
    req.resume();
    res.writeHead(307, { location: `http://127.0.0.2:${otherPort}${req.url ?? "/"}` }).end();
  });
  const port = await listen(redirecting, "127.0.0.1");
  const close = (server: Server) =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return {
    url: `http://127.0.0.1:${port}`,
    authorizations,
    elsewhere,
    close: async () => {
      await close(redirecting);
      await close(other);
    },
  };
}
