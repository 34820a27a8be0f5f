/**
 * A sandbox's git path: the broker's side of agent/git-remote-mh. Requests arrive on the socket
 * in the sandbox's run directory as `/<hex of repository URL>/<smart-HTTP path>`; only the
 * sandbox's own repositories (the remotes the proxy opened for it) and only the three smart-HTTP
 * requests are relayed, to the proxy's remote endpoint, which adds the token. Anything else, such
 * as another repository or another sandbox's, is refused here.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { SERVICE_AUTH_HEADER } from "@metaharness/service-kit/auth";
import type { HttpsClientTls } from "@metaharness/service-kit/grpc";
import type { Logger } from "@metaharness/service-kit/logging";
import { relay, respond } from "./relay-forward.js";
import { normalizeRepositoryUrl } from "@metaharness/events";
import type { PeerGuard } from "../auth/peer-credentials.js";
import { serveOnSocket, type SocketServer } from "./socket-server.js";

export const GIT_SOCKET = "git.sock";

const PATH = /^\/([0-9a-f]{2,4096})\/(info\/refs|git-upload-pack|git-receive-pack)$/;
const HEADERS = ["content-type", "content-encoding", "content-length", "transfer-encoding", "accept", "accept-encoding", "git-protocol", "user-agent"];

export interface GitRelayOptions {
  readonly runDir: string;
  /** Who may connect (LocalSandbox.socketGuard). */
  readonly guard: PeerGuard | undefined;
  /** Normalised repository URL -> the proxy's remote for it. */
  readonly remotes: ReadonlyMap<string, string>;
  readonly serviceAuthorization: string;
  /** TLS to the proxy's remote endpoint (ProxyConnection's `tls`). */
  readonly tls: HttpsClientTls | undefined;
  readonly maxRequestBytes: number;
  readonly maxConnections: number;
  readonly logger: Logger;
}

export function startGitRelay(opts: GitRelayOptions): Promise<SocketServer> {
  return serveOnSocket({ path: join(opts.runDir, GIT_SOCKET), maxConnections: opts.maxConnections, logger: opts.logger, guard: opts.guard }, (req, res) => handle(opts, req, res));
}

async function handle(opts: GitRelayOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://sandbox.invalid");
  const match = PATH.exec(url.pathname);
  if (match === null) return respond(res, 404, "not a git smart-HTTP request");
  const [, hex = "", path = ""] = match;
  const repository = normalizeRepositoryUrl(Buffer.from(hex, "hex").toString("utf8"));
  const remote = repository === undefined ? undefined : opts.remotes.get(repository);
  if (remote === undefined) {
    opts.logger.info({ repository }, "git request refused: not a repository of this sandbox");
    return respond(res, 403, "not a repository of this sandbox");
  }
  const target = new URL(`${remote}/${path}${url.search}`);
  const status = await relay(req, res, {
    target,
    passHeaders: HEADERS,
    addHeaders: { [SERVICE_AUTH_HEADER]: opts.serviceAuthorization },
    maxRequestBytes: opts.maxRequestBytes,
    tls: opts.tls,
  });
  opts.logger.debug({ repository, path, status }, "git request relayed");
}
