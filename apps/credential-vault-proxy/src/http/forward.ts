/**
 * Streams one HTTP request on to its real server and the answer back, with headers passed by
 * allowlist only (so nothing the client sent about auth or proxies travels on, and nothing the
 * server sends about auth comes back), credentials added on the way out, bodies bounded and
 * never buffered. An upstream 401/407 comes back as 403 without WWW-Authenticate: the client has
 * no credential to offer, and must not be invited to prompt for one.
 */
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import { Transform, pipeline, type Readable } from "node:stream";
import { egressRefusal, type EgressPolicy } from "../net/egress-policy.js";
import { answeredItself, remoteKind } from "../metrics.js";

export interface ForwardOptions {
  readonly target: URL;
  /** Lower-case names of client headers passed on. */
  readonly passRequestHeaders: readonly string[];
  /** Added to (and replacing) the client's headers: where a credential goes on. */
  readonly addHeaders: Readonly<Record<string, string>>;
  /** Lower-case names of server headers passed back. */
  readonly passResponseHeaders: readonly string[];
  readonly maxRequestBytes: number;
  readonly timeoutMs: number;
  /** Where the request may connect (checked on the resolved addresses). */
  readonly policy: EgressPolicy;
  /** For https:// targets: the roots to verify the server against (Node's own when undefined). */
  readonly ca?: string | undefined;
  /**
   * Rewrites the response body on its way back (egress scrubs credentials from it); its headers
   * replace the server's, and one set to undefined is dropped; `status`, when given, replaces the
   * server's (an answer the proxy refuses to pass on).
   */
  readonly responseBody?: (upstream: IncomingMessage) => { body: Readable; headers: OutgoingHttpHeaders; status?: number };
}

export interface Forwarded {
  /** The status the client got (0 when the server could not be reached). */
  readonly status: number;
  readonly upstreamStatus: number;
  readonly requestBytes: number;
  readonly error?: string;
}

export function forward(req: IncomingMessage, res: ServerResponse, opts: ForwardOptions): Promise<Forwarded> {
  return new Promise((resolve) => {
    let requestBytes = 0;
    let upstreamStatus = 0;
    let settled = false;
    const done = (status: number, error?: string): void => {
      if (settled) return;
      settled = true;
      resolve({ status, upstreamStatus, requestBytes, ...(error === undefined ? {} : { error }) });
    };
    const headers: OutgoingHttpHeaders = pick(req.headers, opts.passRequestHeaders);
    for (const [k, v] of Object.entries(opts.addHeaders)) headers[k] = v;
    // Refused by the egress policy: a 403 naming the host and the setting (nothing else of it).
    const refuse = (message: string): void => {
      if (res.headersSent) res.destroy();
      else reply(res, 403, message);
      done(403, "refused by the egress policy");
    };
    try {
      opts.policy.check(opts.target.hostname);
    } catch (err) {
      req.resume();
      return refuse((err as Error).message);
    }
    const send = opts.target.protocol === "https:" ? httpsRequest : httpRequest;
    const upstream = send(opts.target, { method: req.method ?? "GET", headers, timeout: opts.timeoutMs, lookup: opts.policy.lookup, ...(opts.ca === undefined ? {} : { ca: opts.ca }) });
    upstream.on("timeout", () => upstream.destroy(new Error("upstream timed out")));
    upstream.on("error", (err) => {
      const refused = egressRefusal(err);
      if (refused !== undefined) return refuse(refused.message);
      if (!res.headersSent) reply(res, 502, "the upstream server could not be reached");
      else res.destroy();
      done(0, err.message === "upstream timed out" ? "timeout" : "unreachable");
    });
    const limit = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        requestBytes += chunk.length;
        if (requestBytes > opts.maxRequestBytes) {
          cb(new Error("request body too large"));
          return;
        }
        cb(null, chunk);
      },
    });
    pipeline(req, limit, upstream, (err) => {
      if (err === undefined || err === null || settled) return;
      if (err.message === "request body too large") {
        if (!res.headersSent) reply(res, 413, `the request body is larger than ${opts.maxRequestBytes} bytes`);
        done(413, "request too large");
      }
      upstream.destroy();
    });
    upstream.on("response", (answer) => {
      upstreamStatus = answer.statusCode ?? 502;
      const rewritten = opts.responseBody?.(answer);
      const status = rewritten?.status ?? (upstreamStatus === 401 || upstreamStatus === 407 ? 403 : upstreamStatus);
      res.writeHead(status, defined({ ...pick(answer.headers, opts.passResponseHeaders), ...(rewritten?.headers ?? {}) }));
      pipeline(rewritten?.body ?? answer, res, (err) => done(status, err === undefined || err === null ? undefined : "aborted"));
    });
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
  });
}

export function reply(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) return;
  answeredItself(res, remoteKind(res.req.url, res.req.method), status);
  const body = `${message}\n`;
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function defined(headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined));
}

function pick(headers: IncomingMessage["headers"], names: readonly string[]): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const name of names) {
    const value = headers[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}
