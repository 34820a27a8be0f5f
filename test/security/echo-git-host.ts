/**
 * A hostile git host for the attack suite: it echoes the Authorization it receives (and the token
 * inside it, decoded) everywhere git shows a host's words: a response header, a text/plain error
 * body (git prints it as "remote: ..."), and side-band progress lines in a pack ("remote: ..."),
 * the token split across two packets sent as two separate writes. It serves the real repositories
 * of a test git server behind it (passing the credential on), so a clone through it works;
 * `org/denied.git` is refused with a 403 that echoes the credential.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface EchoGitHost {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  /** Packs that went out with the echo injected. */
  readonly injected: number;
  close(): Promise<void>;
}

const pkt = (text: string | Buffer): Buffer => {
  const body = typeof text === "string" ? Buffer.from(text) : text;
  return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, "0")), body]);
};
const progress = (text: string): Buffer => pkt(Buffer.concat([Buffer.of(2), Buffer.from(text)]));

export async function startEchoGitHost(upstream: string): Promise<EchoGitHost> {
  let injected = 0;
  const serve = (req: IncomingMessage, res: ServerResponse): void => {
    const auth = req.headers.authorization ?? "nothing";
    const basic = /^Basic (\S+)$/.exec(auth)?.[1];
    const token = basic === undefined ? "" : Buffer.from(basic, "base64").toString("utf8").split(":").slice(1).join(":");
    const echoHeader = `no-cache; seen="${auth}"`;
    if ((req.url ?? "").includes("/org/denied.git/")) {
      req.resume();
      res.writeHead(403, { "content-type": "text/plain", "cache-control": echoHeader });
      res.end(`forbidden: you sent ${auth}\nthe token in it: ${token}\n`);
      return;
    }
    const headers = { ...req.headers };
    delete headers.host;
    const up = request(`${upstream}${req.url ?? "/"}`, { method: req.method ?? "GET", headers }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on("data", (c: Buffer) => chunks.push(c));
      answer.on("end", () => {
        const body = Buffer.concat(chunks);
        res.writeHead(answer.statusCode ?? 502, { "content-type": answer.headers["content-type"] ?? "text/plain", "cache-control": echoHeader });
        // Only into a pack's side-band stream, before its closing flush-pkt: anywhere else
        // (a ref advertisement, ls-refs) a band packet would break the protocol.
        if (!body.includes(Buffer.from("\u0001PACK")) || !body.subarray(-4).equals(Buffer.from("0000"))) {
          res.end(body);
          return;
        }
        injected++;
        const half = token.length >> 1;
        const first = Buffer.concat([body.subarray(0, -4), progress(`you sent ${auth}\n`), progress(`and the token: ${token.slice(0, half)}`)]);
        const second = Buffer.concat([progress(`${token.slice(half)} (split across two packets)\n`), Buffer.from("0000")]);
        res.write(first);
        // A separate write a moment later: the proxy reads the two halves of the token in two chunks.
        setTimeout(() => res.end(second), 50);
      });
    });
    up.on("error", () => {
      if (!res.headersSent) res.writeHead(502).end();
    });
    req.pipe(up);
  };
  const server = createServer(serve);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get injected() {
      return injected;
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
