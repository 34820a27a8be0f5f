/**
 * The git smart-HTTP path of the remote endpoint: `/git/<capability>/<n>/<service path>`. The
 * capability names a remote the broker opened for one sandbox; `n` picks one of its repositories.
 * Only the three smart-HTTP requests pass (ref advertisement, upload-pack, receive-pack); the
 * session's git_token for that repository is added as Basic auth on the way to the real server.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { Db } from "@metaharness/db";
import type { Logger } from "@metaharness/service-kit";
import { forward, reply } from "../http/forward.js";
import type { EgressPolicy } from "../net/egress-policy.js";
import type { SessionCredentials } from "../session/session-credentials.js";
import { findRemote } from "../store/remotes.js";

const GIT_PATH = /^\/git\/([A-Za-z0-9_-]{43})\/(\d{1,3})\/(info\/refs|git-upload-pack|git-receive-pack)$/;
const SERVICES = new Set(["git-upload-pack", "git-receive-pack"]);

const REQUEST_HEADERS = ["content-type", "content-encoding", "content-length", "transfer-encoding", "accept", "accept-encoding", "git-protocol", "user-agent"];
const RESPONSE_HEADERS = ["content-type", "content-encoding", "content-length", "cache-control", "expires", "pragma"];

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
  const addHeaders: Record<string, string> = {};
  if (auth !== undefined) {
    addHeaders["authorization"] = `Basic ${Buffer.from(`${auth.username}:${auth.token.reveal()}`, "utf8").toString("base64")}`;
  }
  const started = performance.now();
  const result = await forward(req, res, {
    target,
    passRequestHeaders: REQUEST_HEADERS,
    addHeaders,
    passResponseHeaders: RESPONSE_HEADERS,
    policy: deps.egress,
    maxRequestBytes: deps.maxRequestBytes,
    timeoutMs: deps.timeoutMs,
    responseBody: refusedCredentials,
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

/**
 * An upstream 401/407 reaches git as a 403 (forward.ts); its body says why, in words git prints
 * ("remote: ...") and the broker reads to tell a rejected credential from a refused access
 * (repository_authentication_error vs repository_forbidden_error). Anything else passes as is.
 */
function refusedCredentials(answer: IncomingMessage): { body: Readable; headers: OutgoingHttpHeaders } {
  const status = answer.statusCode ?? 0;
  if (status !== 401 && status !== 407) return { body: answer, headers: {} };
  answer.resume(); // the server's own words may name the auth it wants: dropped
  const text = `the repository host rejected the credentials (HTTP ${status})\n`;
  return {
    body: Readable.from([text]),
    // Our own body: none of the server's encoding headers apply to it.
    headers: { "content-type": "text/plain; charset=utf-8", "content-length": String(Buffer.byteLength(text)), "content-encoding": undefined },
  };
}
