/**
 * A lean `fetch` for the SDK's `fetch` option: the request on node:http(s) with a keep-alive
 * Agent, answered with a Response whose body is the socket's data. Node's built-in fetch
 * (undici) builds a Request, copies the headers twice, runs its dispatcher and pipes the body
 * through its own web streams for every request; the SDK sends a string body and reads the
 * response once, so none of that is needed. What the SDK and classify.ts rely on is kept:
 * - a failure before the response rejects with TypeError("fetch failed", { cause }), as undici
 *   does (the SDK makes it an APIConnectionError);
 * - the signal (the caller's abort, and the SDK's timeout until the headers arrive) rejects with
 *   an AbortError before the response and errors the body with it after, as undici does (the SDK
 *   makes it APIUserAbortError or APIConnectionTimeoutError; a stream aborted ends quietly);
 * - a body cut off mid-stream errors the body (the SDK wraps it in an AnthropicError: UNAVAILABLE);
 * - a redirect fails as with `redirect: "error"` (the Messages API answers where it is asked);
 * - a non-2xx answer is read whole first, so `text()` and the headers (retry-after) are the
 *   Response's own.
 * A body that is not a string (a stream, a form) goes to the built-in fetch unchanged.
 */
import http from "node:http";
import https from "node:https";

type Fetch = typeof fetch;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Statuses whose Response may not have a body. */
const NULL_BODY = new Set([101, 204, 205, 304]);

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === "AbortError" ? reason : new DOMException("This operation was aborted", "AbortError");
}

function headerRecord(headers: RequestInit["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers === undefined || headers === null) return out;
  if (headers instanceof Headers) headers.forEach((value, name) => (out[name] = value));
  else if (Array.isArray(headers)) for (const [name, value] of headers as [string, string][]) out[name.toLowerCase()] = value;
  else for (const name of Object.keys(headers)) out[name.toLowerCase()] = (headers as Record<string, string>)[name]!;
  return out;
}

function responseHeaders(raw: readonly string[]): Headers {
  const headers = new Headers();
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  return headers;
}

/**
 * A Response whose body is the socket's data itself, a Node stream, rather than a web stream fed
 * from it (a web stream's reader, queue and promises per chunk cost about as much again as the
 * rest of the lean fetch). The SDK reads a body through its async iterator (its shims'
 * `readableStreamIterator` takes `Symbol.asyncIterator` first, and cancels through `return()`),
 * which a Node stream has: it reads as asked (backpressure as before), ends, or throws what broke
 * it (a cut-off body, an abort). text(), json() and arrayBuffer() read the same stream.
 */
function nodeBodyResponse(stream: http.IncomingMessage, init: ResponseInit): Response {
  const response = new Response(null, init);
  const text = async (): Promise<string> => (await readAll(stream)).toString("utf8");
  // Own properties over the prototype's (Node's Response is not subclassed: its types declare
  // these as properties, not accessors and methods).
  Object.defineProperties(response, {
    body: { value: stream },
    text: { value: text },
    json: { value: async (): Promise<unknown> => JSON.parse(await text()) as unknown },
    arrayBuffer: { value: async (): Promise<ArrayBuffer> => new Uint8Array(await readAll(stream)).buffer },
  });
  return response;
}

function readAll(res: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on("data", (chunk: Buffer) => chunks.push(chunk));
    res.once("end", () => resolve(Buffer.concat(chunks)));
    res.once("error", reject);
  });
}

export interface NodeFetch {
  readonly fetch: Fetch;
  /** Closes the Agents' idle sockets. */
  close(): void;
}

export function createNodeFetch(): NodeFetch {
  // An idle socket is closed after 4 s (undici's keepAliveTimeout), or 1 s before a server's
  // `Keep-Alive: timeout=` if that is sooner, so a request is rarely sent on a socket the server
  // is closing. The timeout ends only idle sockets: a stream quiet for longer is left alone.
  const agentOptions = { keepAlive: true, scheduling: "lifo" as const, timeout: 4_000 };
  const agents = { "http:": new http.Agent(agentOptions), "https:": new https.Agent(agentOptions) };

  const leanFetch = (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const body = init.body;
    if (input instanceof Request || (body !== undefined && body !== null && typeof body !== "string")) {
      return fetch(input, init);
    }
    return new Promise<Response>((resolve, reject) => {
      const url = typeof input === "string" ? new URL(input) : input;
      const signal = init.signal ?? undefined;
      if (signal?.aborted === true) {
        reject(abortError(signal));
        return;
      }
      const isHttps = url.protocol === "https:";
      const headers = headerRecord(init.headers);
      if (typeof body === "string") headers["content-length"] = String(Buffer.byteLength(body));
      const options: http.RequestOptions = {
        method: init.method ?? "GET",
        hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
        port: url.port === "" ? undefined : url.port,
        path: url.pathname + url.search,
        headers,
        agent: isHttps ? agents["https:"] : agents["http:"],
      };
      let response: http.IncomingMessage | undefined;
      const onAbort = (): void => {
        const err = abortError(signal!);
        // Before the response the promise rejects; after it the body errors with the same.
        if (response === undefined) reject(err);
        req.destroy(err);
        response?.destroy(err);
      };
      const release = (): void => signal?.removeEventListener("abort", onAbort);
      const req = (isHttps ? https : http).request(options, (res) => {
        response = res;
        const status = res.statusCode ?? 0;
        if (REDIRECTS.has(status)) {
          release();
          res.destroy();
          reject(new TypeError("fetch failed", { cause: new Error(`redirect ${status} not followed`) }));
          return;
        }
        const responseInit = { status, statusText: res.statusMessage ?? "", headers: responseHeaders(res.rawHeaders) };
        if (NULL_BODY.has(status)) {
          release();
          res.resume();
          resolve(new Response(null, responseInit));
          return;
        }
        if (status >= 200 && status < 300) {
          res.once("close", release);
          resolve(nodeBodyResponse(res, responseInit));
          return;
        }
        readAll(res).then(
          (all) => {
            release();
            resolve(new Response(all, responseInit));
          },
          (err: unknown) => {
            release();
            reject(signal?.aborted === true ? abortError(signal) : new TypeError("fetch failed", { cause: err }));
          },
        );
      });
      req.once("error", (err) => {
        if (response !== undefined) return;
        release();
        reject(signal?.aborted === true ? abortError(signal) : new TypeError("fetch failed", { cause: err }));
      });
      signal?.addEventListener("abort", onAbort, { once: true });
      req.end(body ?? undefined);
    });
  };

  return {
    fetch: leanFetch,
    close(): void {
      agents["http:"].destroy();
      agents["https:"].destroy();
    },
  };
}
