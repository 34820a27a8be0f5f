/**
 * The egress path of the remote endpoint: absolute-form HTTP requests from a NETWORK_MODE_ALLOWLIST
 * sandbox (relayed by the broker), sent on to their host only if the sandbox's allowlist has it,
 * with the session's matching http_bearer credential injected. The sandbox speaks plain HTTP to
 * its own relay (the path is a unix socket and a private link, never a network it shares); the
 * proxy originates TLS to the real host (MH_EGRESS_UPSTREAM_SCHEME). The answer comes back
 * decoded (every coding of its Content-Encoding, chained or not) and scrubbed of the injected
 * secret, so an echoing server cannot leak it inward; an answer in a coding the proxy cannot
 * decode is refused (502 naming it), never passed on encoded without its header.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { pipeline, Readable } from "node:stream";
import type { Db } from "@metaharness/db";
import { SERVICE_AUTH_HEADER } from "@metaharness/service-kit/auth";
import type { Logger } from "@metaharness/service-kit/logging";
import { scrub } from "../crypto/secret.js";
import { decodersFor } from "../http/content-coding.js";
import { forward, reply } from "../http/forward.js";
import type { EgressPolicy } from "../net/egress-policy.js";
import { findRemote } from "../store/remotes.js";
import type { SessionCredentials } from "../session/session-credentials.js";
import { scopeAllows, type UnrestrictedLimits } from "./egress-scope.js";
import { scrubStream } from "./scrub-stream.js";

/** Never passed on: hop-by-hop, proxy, and our own headers. */
const DROPPED = new Set([
  "host", "connection", "keep-alive", "proxy-authorization", "proxy-connection", "te", "trailer", "upgrade",
  SERVICE_AUTH_HEADER, "accept-encoding", "content-length",
]);
const RESPONSE_DROPPED = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "www-authenticate", "proxy-authenticate", "trailer", "upgrade"]);

export interface EgressSendDeps {
  readonly credentials: SessionCredentials;
  readonly egress: EgressPolicy;
  /** The policy of unrestricted endpoints: public addresses only. */
  readonly publicOnly: EgressPolicy;
  /** The roots an upstream's certificate is verified against (the system store, MH_EGRESS_TRUST_FILE). */
  readonly upstreamCa: string | undefined;
  readonly upstreamScheme: "http" | "https";
  readonly maxRequestBytes: number;
  readonly timeoutMs: number;
}

export interface EgressDeps extends EgressSendDeps {
  readonly db: Db;
  readonly unrestricted: UnrestrictedLimits;
  readonly logger: Logger;
}

export async function forwardEgress(deps: EgressDeps, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const auth = /^Bearer (\S+)$/.exec(String(req.headers["proxy-authorization"] ?? ""));
  const remote = auth?.[1] === undefined ? undefined : await findRemote(deps.db, auth[1], "egress");
  if (remote === undefined) return reply(res, 407, "no such egress endpoint (it expired or was closed)");
  const log = deps.logger.child({ session_id: remote.sessionId, sandbox_id: remote.sandboxId, host: url.host, method: req.method });
  if (url.protocol !== "http:" || url.username !== "" || url.password !== "") return reply(res, 400, "only plain http:// URLs without user info");
  const decision = scopeAllows(remote.scope, { host: url.host, hostname: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port || (deps.upstreamScheme === "https" ? 443 : 80)) }, deps.unrestricted);
  if (!decision.allowed) {
    log.info({ allowed: remote.scope }, "egress refused: host not allowed");
    return reply(res, 403, decision.why);
  }
  const target = new URL(url);
  target.protocol = `${deps.upstreamScheme}:`;
  await sendEgress(deps, req, res, { target, sessionId: remote.sessionId, publicOnly: decision.publicOnly, log });
}

/**
 * Sends one allowed request on to `target` with the session's credential for the target's own
 * host (the host the request goes to, never one a header names), and the answer back scrubbed.
 * No redirect is followed: a 3xx goes back to the client, whose next request to another host is
 * checked and credentialed for that host alone. Used by the plain path and by interception.
 */
export async function sendEgress(
  deps: EgressSendDeps,
  req: IncomingMessage,
  res: ServerResponse,
  to: { readonly target: URL; readonly sessionId: string; readonly publicOnly: boolean; readonly log: Logger },
): Promise<void> {
  const injected = await deps.credentials.bearer(to.sessionId, to.target.host);
  const passRequest = Object.keys(req.headers).filter((h) => !DROPPED.has(h) && h !== injected?.headerName.toLowerCase());
  const secrets = injected === undefined ? [] : [injected.value, injected.token];
  const started = performance.now();
  const result = await forward(req, res, {
    target: to.target,
    passRequestHeaders: passRequest,
    addHeaders: { "accept-encoding": "identity", ...(injected === undefined ? {} : { [injected.headerName]: injected.value.reveal() }) },
    passResponseHeaders: [],
    policy: to.publicOnly ? deps.publicOnly : deps.egress,
    ca: deps.upstreamCa,
    maxRequestBytes: deps.maxRequestBytes,
    timeoutMs: deps.timeoutMs,
    responseBody: (answer) => scrubbedAnswer(answer, secrets),
  });
  to.log.info(
    { credential_id: injected?.credentialId, status: result.status, upstream_status: result.upstreamStatus, error: result.error, duration_ms: Math.round(performance.now() - started) },
    "egress request forwarded",
  );
}

function scrubbedAnswer(answer: IncomingMessage, secrets: Parameters<typeof scrubStream>[0]): { body: Readable; headers: OutgoingHttpHeaders; status?: number } {
  const decoding = decodersFor(answer.headers["content-encoding"]);
  if (!decoding.ok) {
    answer.resume();
    const text = `the upstream answered in a content encoding the egress proxy cannot decode to check it (${decoding.coding}); ask for another (Accept-Encoding)\n`;
    return { body: Readable.from([text]), headers: { "content-type": "text/plain; charset=utf-8", "content-length": String(Buffer.byteLength(text)) }, status: 502 };
  }
  const scrubber = scrubStream(secrets);
  pipeline([answer, ...decoding.decoders, scrubber], () => undefined);
  return { body: scrubber, headers: scrubbedHeaders(answer, secrets) };
}

function scrubbedHeaders(answer: IncomingMessage, secrets: Parameters<typeof scrub>[1]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value === undefined || RESPONSE_DROPPED.has(name)) continue;
    out[name] = Array.isArray(value) ? value.map((v) => scrub(v, secrets)) : scrub(value, secrets);
  }
  return out;
}
