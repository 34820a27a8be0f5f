/**
 * Streams one request from a sandbox on to the credential proxy and the answer back: headers by
 * allowlist (nothing the sandbox sends about auth or proxies travels on), the broker's service
 * token added, bodies bounded and never buffered.
 */
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import { Transform, pipeline } from "node:stream";
import type { HttpsClientTls } from "@metaharness/service-kit/grpc";

export interface RelayOptions {
  readonly target: URL;
  /** Lower-case names of the sandbox's headers passed on; undefined: all but the dropped ones. */
  readonly passHeaders?: readonly string[];
  readonly dropHeaders?: ReadonlySet<string>;
  readonly addHeaders: Readonly<Record<string, string>>;
  readonly maxRequestBytes: number;
  /** For absolute-form (forward proxy) requests: the path is the whole URL. */
  readonly absoluteForm?: boolean;
  /** Whom to trust and what to present when the target is https:// (otherwise the system's roots). */
  readonly tls?: HttpsClientTls | undefined;
}

export function relay(req: IncomingMessage, res: ServerResponse, opts: RelayOptions): Promise<number> {
  return new Promise((resolve) => {
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) {
      const passed = opts.passHeaders === undefined ? !(opts.dropHeaders?.has(name) ?? false) : opts.passHeaders.includes(name);
      if (passed && value !== undefined) headers[name] = value;
    }
    Object.assign(headers, opts.addHeaders);
    const secure = opts.target.protocol === "https:";
    if (opts.tls !== undefined && !secure) {
      // Set up for TLS: the service token and the capability must not cross the network in clear.
      respond(res, 502, `the credential proxy's endpoint ${opts.target.origin} is not https://, and this broker only speaks TLS to it`);
      resolve(502);
      return;
    }
    const send = secure ? httpsRequest : httpRequest;
    const tls = secure ? (opts.tls ?? {}) : {};
    const upstream = opts.absoluteForm === true
      ? send({ host: opts.target.hostname, port: opts.target.port, method: req.method ?? "GET", path: req.url ?? "/", headers, ...tls })
      : send(opts.target, { method: req.method ?? "GET", headers, ...tls });
    upstream.on("error", () => {
      respond(res, 502, "the credential proxy could not be reached");
      resolve(502);
    });
    let bytes = 0;
    const limit = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        bytes += chunk.length;
        cb(bytes > opts.maxRequestBytes ? new Error("too large") : null, chunk);
      },
    });
    pipeline(req, limit, upstream, (err) => {
      if (err === undefined || err === null) return;
      if (err.message === "too large") respond(res, 413, `the request body is larger than ${opts.maxRequestBytes} bytes`);
      upstream.destroy();
    });
    upstream.on("response", (answer) => {
      const status = answer.statusCode ?? 502;
      res.writeHead(status, answer.headers);
      pipeline(answer, res, () => resolve(status));
    });
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
  });
}

export function respond(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) return;
  const body = `${message}\n`;
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(body) });
  res.end(body);
}
