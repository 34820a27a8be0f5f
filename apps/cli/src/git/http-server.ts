/**
 * A git smart-HTTP server for local repositories: `git http-backend` (git's own CGI) behind
 * node:http, on localhost and a free port, serving the bare repositories under one directory to
 * requests that carry the right HTTP Basic credentials (a request without them is refused with
 * 401, as a private GitHub repository would). `mh demo` serves its project from one, so the agent's
 * clone and push take the same path as with a real remote: through the credential vault proxy,
 * which adds the token. Git's user and system config are ignored, so the machine's settings (a
 * signing key, hooks paths) cannot change what the server does.
 */
import { spawn } from "node:child_process";
import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface GitHttpServerOptions {
  /** The directory holding the bare repositories served (`<root>/<name>.git`). */
  readonly root: string;
  /** Whether the HTTP Basic user and password of a request may read and push. */
  readonly authorize: (user: string, password: string) => boolean;
  /** Where to listen; 127.0.0.1 by default, port 0 (any free one). */
  readonly host?: string;
  readonly port?: number;
}

export interface GitHttpServer {
  /** `http://host:port`: a repository's URL is `<url>/<name>.git`. */
  readonly url: string;
  /** Requests refused for missing or wrong credentials. */
  readonly refused: number;
  /** Requests served by git. */
  readonly served: number;
  close(): Promise<void>;
}

/** Git with only the environment it needs, and none of this machine's git config. */
export function gitEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env["PATH"] ?? "/usr/bin:/bin", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", HOME: "/nonexistent", ...extra };
}

/** A comparison that takes as long whatever the guess, for passwords. */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function credentials(header: string | undefined): { user: string; password: string } | undefined {
  const match = /^Basic ([A-Za-z0-9+/=]+)$/.exec(header ?? "");
  if (match === null) return undefined;
  const text = Buffer.from(match[1] ?? "", "base64").toString("utf8");
  const colon = text.indexOf(":");
  return colon < 0 ? undefined : { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

/** Runs git http-backend for one request, relaying its CGI answer (Status and headers, then the body). */
function backend(root: string, user: string, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? "/", "http://git.invalid");
  const header = (name: string): string | undefined => {
    const v = req.headers[name];
    return typeof v === "string" ? v : undefined;
  };
  const cgi = spawn("git", ["http-backend"], {
    env: gitEnv({
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: "1",
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ""),
      REQUEST_METHOD: req.method ?? "GET",
      // Set, so http-backend allows pushes (receive-pack) as well as fetches.
      REMOTE_USER: user || "git",
      REMOTE_ADDR: req.socket.remoteAddress ?? "127.0.0.1",
      CONTENT_TYPE: header("content-type") ?? "",
      ...(header("content-length") === undefined ? {} : { CONTENT_LENGTH: header("content-length") ?? "" }),
      ...(header("content-encoding") === undefined ? {} : { HTTP_CONTENT_ENCODING: header("content-encoding") ?? "" }),
      ...(header("git-protocol") === undefined ? {} : { GIT_PROTOCOL: header("git-protocol") ?? "" }),
    }),
    stdio: ["pipe", "pipe", "ignore"],
  });
  req.pipe(cgi.stdin);
  cgi.stdin.on("error", () => undefined);
  let head = Buffer.alloc(0);
  let started = false;
  cgi.stdout.on("data", (chunk: Buffer) => {
    if (started) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf("\r\n\r\n");
    if (end < 0) return;
    started = true;
    let status = 200;
    const headers: Record<string, string> = {};
    for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
      const colon = line.indexOf(":");
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === "status") status = Number.parseInt(value, 10) || 500;
      else if (name !== "") headers[name] = value;
    }
    res.writeHead(status, headers);
    res.write(head.subarray(end + 4));
  });
  cgi.on("error", () => {
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
    res.end("git http-backend could not run\n");
  });
  cgi.on("close", () => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
    res.end();
  });
}

export async function startGitHttpServer(opts: GitHttpServerOptions): Promise<GitHttpServer> {
  let refused = 0;
  let served = 0;
  const server = createServer((req, res) => {
    const given = credentials(req.headers.authorization);
    if (given === undefined || !opts.authorize(given.user, given.password)) {
      refused++;
      req.resume();
      res.writeHead(401, { "www-authenticate": 'Basic realm="mh git"', "content-type": "text/plain" }).end("authentication required\n");
      return;
    }
    served++;
    backend(opts.root, given.user, req, res);
  });
  const host = opts.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    get refused() {
      return refused;
    },
    get served() {
      return served;
    },
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
