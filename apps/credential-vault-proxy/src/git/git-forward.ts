/**
 * The git smart-HTTP path of the remote endpoint: `/git/<capability>/<n>/<service path>`. The
 * capability names a remote the broker opened for one sandbox; `n` picks one of its repositories.
 * Only the three smart-HTTP requests pass (ref advertisement, upload-pack, receive-pack); the
 * session's git_token for that repository is added as Basic auth on the way to the real server,
 * and taken out of everything that comes back: a host that echoes the Authorization it got (in a
 * "remote:" progress line, an error body, a header) must not hand the token to the sandbox, and
 * from there to tool results, events, logs and the model. Bodies are decoded first (a coding
 * the proxy cannot read is refused), then scrubbed as pkt-lines (git/pkt-line-scrub.ts) or, for
 * anything else such as a text/plain error, as plain bytes.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { Readable, pipeline } from "node:stream";
import type { Db } from "@metaharness/db";
import type { Logger } from "@metaharness/service-kit/logging";
import { scrub, type Secret } from "../crypto/secret.js";
import { scrubStream } from "../egress/scrub-stream.js";
import { decodersFor } from "../http/content-coding.js";
import { forward, reply } from "../http/forward.js";
import type { EgressPolicy } from "../net/egress-policy.js";
import type { SessionCredentials } from "../session/session-credentials.js";
import { findRemote } from "../store/remotes.js";
import { scrubPktLines } from "./pkt-line-scrub.js";

const GIT_PATH = /^\/git\/([A-Za-z0-9_-]{43})\/(\d{1,3})\/(info\/refs|git-upload-pack|git-receive-pack)$/;
const SERVICES = new Set(["git-upload-pack", "git-receive-pack"]);

// accept-encoding is ours (identity): an answer is scrubbed decoded, so it had better come so.
const REQUEST_HEADERS = ["content-type", "content-encoding", "content-length", "transfer-encoding", "accept", "git-protocol", "user-agent"];
// content-length and content-encoding are not passed: the body comes back decoded and scrubbed.
const RESPONSE_HEADERS = ["content-type", "cache-control", "expires", "pragma"];
const GIT_CONTENT = /^application\/x-git-/i;

export interface GitForwardDeps {
  readonly db: Db;
  readonly credentials: SessionCredentials;
  readonly egress: EgressPolicy;
  readonly maxRequestBytes: number;
  readonly timeoutMs: number;
  readonly logger: Logger;
}

/** Serves one git request; `url` is the request's parsed URL. */
export async function forwardGit(deps: GitForwardDeps, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const match = GIT_PATH.exec(url.pathname);
  if (match === null) return reply(res, 404, "not a git smart-HTTP path");
  const [, capability = "", index = "", path = ""] = match;
  const service = url.searchParams.get("service");
  if (path === "info/refs" ? req.method !== "GET" || service === null || !SERVICES.has(service) : req.method !== "POST") {
    return reply(res, 400, "not a git smart-HTTP request");
  }
  const remote = await findRemote(deps.db, capability, "git");
  const repoUrl = remote?.scope[Number(index)];
  if (remote === undefined || repoUrl === undefined) return reply(res, 404, "no such remote (it expired or was closed)");
  const log = deps.logger.child({ session_id: remote.sessionId, sandbox_id: remote.sandboxId, repository: repoUrl, path });
  const auth = await deps.credentials.git(remote.sessionId, repoUrl);
  const target = new URL(`${repoUrl}/${path}`);
  if (service !== null) target.searchParams.set("service", service);
  const addHeaders: Record<string, string> = { "accept-encoding": "identity" };
  if (auth !== undefined) {
    addHeaders["authorization"] = `Basic ${Buffer.from(`${auth.username}:${auth.token.reveal()}`, "utf8").toString("base64")}`;
  }
  const started = performance.now();
  const result = await forward(req, res, {
    target,
    passRequestHeaders: REQUEST_HEADERS,
    addHeaders,
    passResponseHeaders: [],
    policy: deps.egress,
    maxRequestBytes: deps.maxRequestBytes,
    timeoutMs: deps.timeoutMs,
    responseBody: (answer) => scrubbedAnswer(answer, auth === undefined ? [] : [auth.token]),
  });
  log.info(
    {
      credential_id: auth?.credentialId,
      status: result.status,
      upstream_status: result.upstreamStatus,
      request_bytes: result.requestBytes,
      error: result.error,
      duration_ms: Math.round(performance.now() - started),
    },
    "git request forwarded",
  );
}

type Answer = { body: Readable; headers: OutgoingHttpHeaders; status?: number };

/**
 * The server's answer as git gets it: decoded and scrubbed of `secrets`, with the allowed headers
 * scrubbed too. An upstream 401/407 reaches git as a 403 (forward.ts); its body says why, in words
 * git prints ("remote: ...") and the broker reads to tell a rejected credential from a refused
 * access (repository_authentication_error vs repository_forbidden_error).
 */
function scrubbedAnswer(answer: IncomingMessage, secrets: readonly Secret[]): Answer {
  const status = answer.statusCode ?? 0;
  // The server's own words may name the auth it wants: dropped.
  if (status === 401 || status === 407) return ourText(answer, `the repository host rejected the credentials (HTTP ${status})`);
  const decoding = decodersFor(answer.headers["content-encoding"]);
  if (!decoding.ok) return { ...ourText(answer, `the repository host answered in a content encoding the credential proxy cannot read (${decoding.coding})`), status: 502 };
  const headers: OutgoingHttpHeaders = {};
  for (const name of RESPONSE_HEADERS) {
    const value = answer.headers[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.map((v) => scrub(v, secrets)) : scrub(value, secrets);
  }
  const scrubber = GIT_CONTENT.test(String(answer.headers["content-type"] ?? "")) ? scrubPktLines(secrets) : scrubStream(secrets);
  pipeline([answer, ...decoding.decoders, scrubber], () => undefined);
  return { body: scrubber, headers };
}

function ourText(answer: IncomingMessage, message: string): Answer {
  answer.resume();
  const text = `${message}\n`;
  return { body: Readable.from([text]), headers: { "content-type": "text/plain; charset=utf-8", "content-length": String(Buffer.byteLength(text)) } };
}
