/**
 * A real OAuth 2.0 token endpoint for tests (a small node http server on port 0). It issues
 * access tokens with an expiry and rotates the refresh token on every refresh, so a second
 * refresh with a spent refresh token fails (invalid_grant), as strict servers do. It checks the
 * client authentication method, counts refreshes, can be slowed down to widen races, and says
 * whether an access token is valid (the MCP server asks it).
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { text } from "node:stream/consumers";

export interface OAuthServerOptions {
  readonly clientId: string;
  /** Empty for a public client ("none"). */
  readonly clientSecret: string;
  readonly method: "client_secret_basic" | "client_secret_post" | "none";
  /** Lifetime of issued access tokens. */
  readonly expiresInSeconds?: number;
  /** Delay before answering a refresh. */
  readonly delayMs?: number;
}

export interface OAuthServer {
  readonly url: string;
  /** Successful refresh-token grants. */
  readonly refreshes: number;
  /** Refused requests (bad client auth, spent refresh token, ...). */
  readonly refusals: number;
  /** Issues a first pair (as an authorization-code grant would). */
  issue(expiresInSeconds?: number): { accessToken: string; refreshToken: string; expiresAt: Date };
  isValid(accessToken: string): boolean;
  /** Every token this server ever issued (for leak scans). */
  readonly issued: readonly string[];
  revokeAll(): void;
  close(): Promise<void>;
}

export async function startOAuthServer(opts: OAuthServerOptions): Promise<OAuthServer> {
  const access = new Map<string, number>();
  let refresh = "";
  let refreshes = 0;
  let refusals = 0;
  const issued: string[] = [];
  const issue = (expiresIn = opts.expiresInSeconds ?? 3600): { accessToken: string; refreshToken: string; expiresAt: Date } => {
    const accessToken = `at_${randomBytes(16).toString("hex")}`;
    refresh = `rt_${randomBytes(16).toString("hex")}`;
    const expiresAt = new Date(Date.now() + expiresIn * 1000);
    access.set(accessToken, expiresAt.getTime());
    issued.push(accessToken, refresh);
    return { accessToken, refreshToken: refresh, expiresAt };
  };
  const server = createServer((req, res) => {
    void (async () => {
      const body = new URLSearchParams(await text(req));
      if (opts.delayMs !== undefined) await new Promise((r) => setTimeout(r, opts.delayMs));
      const refuse = (status: number, error: string): void => {
        refusals++;
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ error }));
      };
      if (req.method !== "POST" || req.url !== "/token") return refuse(404, "not_found");
      if (!clientAuthenticated(opts, req, body)) return refuse(401, "invalid_client");
      if (body.get("grant_type") !== "refresh_token") return refuse(400, "unsupported_grant_type");
      if (body.get("refresh_token") !== refresh || refresh === "") return refuse(400, "invalid_grant");
      refreshes++;
      const pair = issue();
      res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" }).end(
        JSON.stringify({
          access_token: pair.accessToken,
          token_type: "Bearer",
          expires_in: opts.expiresInSeconds ?? 3600,
          refresh_token: pair.refreshToken,
        }),
      );
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/token`,
    get refreshes() {
      return refreshes;
    },
    get refusals() {
      return refusals;
    },
    issue,
    isValid: (token) => (access.get(token) ?? 0) > Date.now(),
    issued,
    revokeAll: () => access.clear(),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function clientAuthenticated(opts: OAuthServerOptions, req: IncomingMessage, body: URLSearchParams): boolean {
  if (opts.method === "client_secret_basic") {
    const header = req.headers.authorization ?? "";
    const decoded = Buffer.from(header.replace(/^Basic /, ""), "base64").toString("utf8");
    const [id, secret] = decoded.split(":").map((p) => decodeURIComponent(p.replace(/\+/g, " ")));
    return header.startsWith("Basic ") && id === opts.clientId && secret === opts.clientSecret && !body.has("client_secret");
  }
  if (opts.method === "client_secret_post") {
    return body.get("client_id") === opts.clientId && body.get("client_secret") === opts.clientSecret && req.headers.authorization === undefined;
  }
  return body.get("client_id") === opts.clientId && !body.has("client_secret") && req.headers.authorization === undefined;
}
