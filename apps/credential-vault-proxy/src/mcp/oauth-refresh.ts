/**
 * The OAuth 2.0 refresh-token grant (RFC 6749 §6) against a credential's token endpoint, with the
 * client authentication its `token_endpoint_auth_method` names (§2.3.1: client_secret_basic,
 * client_secret_post, or none for a public client). Nothing of the endpoint's answer reaches an
 * error message except its status and its `error` code: a misbehaving endpoint echoing a token
 * back cannot leak it through us.
 */
import { MhError } from "@metaharness/errors";
import type { McpOAuthCredential, ProbeHttpResponse } from "@metaharness/proto";
import { deadline } from "@metaharness/service-kit/grpc";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { secretsOf, type SecretBundle } from "../crypto/bundle.js";
import { secretOrUndefined, type Secret } from "../crypto/secret.js";
import { egressRefusal } from "../net/egress-policy.js";
import { captureText, readBounded } from "./http-capture.js";

export interface Refreshed {
  readonly accessToken: Secret;
  /** A rotated refresh token, when the endpoint issued one. */
  readonly refreshToken: Secret | undefined;
  readonly expiresAt: Date | undefined;
}

export type Refresher = (config: McpOAuthCredential, secret: SecretBundle, signal?: AbortSignal) => Promise<Refreshed>;

/**
 * The token endpoint answered, but not with a token. `httpResponse` is its answer as a
 * validation may show it: cut short and scrubbed of every secret of the credential.
 */
export class TokenEndpointRefused extends MhError {
  constructor(
    code: "FAILED_PRECONDITION" | "UNAVAILABLE",
    message: string,
    readonly httpResponse: ProbeHttpResponse,
  ) {
    super(code, message);
  }
}

/** `fetch` is the egress policy's: the token endpoint is a URL the tenant wrote. */
export function refreshGrant(timeoutMs: number, fetch: FetchLike): Refresher {
  return async (config, secret, signal) => {
    const refreshToken = secret.refreshToken;
    if (refreshToken === undefined) {
      throw new MhError("FAILED_PRECONDITION", `the access token for ${config.mcpServerUrl} expired and its credential has no refresh token`);
    }
    const body = new URLSearchParams({ grant_type: "refresh_token", refresh_token: refreshToken.reveal() });
    if (config.scope !== "") body.set("scope", config.scope);
    if (config.resource !== undefined && config.resource !== "") body.set("resource", config.resource);
    const headers: Record<string, string> = {
      "content-type": "application/x-www-form-urlencoded",
      accept: "application/json",
    };
    const method = config.tokenEndpointAuthMethod;
    const clientSecret = secret.clientSecret?.reveal() ?? "";
    if (method === "client_secret_basic") {
      const pair = `${formEncode(config.clientId)}:${formEncode(clientSecret)}`;
      headers["authorization"] = `Basic ${Buffer.from(pair, "utf8").toString("base64")}`;
    } else {
      body.set("client_id", config.clientId);
      if (method === "client_secret_post") body.set("client_secret", clientSecret);
    }
    const where = `the token endpoint of ${config.mcpServerUrl}`;
    let response: Response;
    // One deadline for the request and its body.
    const until = deadline(timeoutMs, ...(signal === undefined ? [] : [signal]));
    let read: Awaited<ReturnType<typeof readBounded>>;
    try {
      try {
        response = await fetch(config.tokenEndpoint, { method: "POST", headers, body, redirect: "error", signal: until.signal });
      } catch (err) {
        throw egressRefusal(err) ?? new MhError("UNAVAILABLE", `${where} could not be reached`, { cause: errorName(err) });
      }
      read = await readBounded(response);
    } finally {
      until.clear();
    }
    const { text, cut } = read;
    // An answer larger than any token response is not parsed (nor shown beyond its start).
    const json = cut ? undefined : parseJson(text);
    const answer = (): ProbeHttpResponse => captureText(response.status, response.headers.get("content-type") ?? "", text, secretsOf(secret), cut);
    if (!response.ok) {
      const code = typeof json?.["error"] === "string" ? json["error"].replace(/[^A-Za-z0-9_.-]/g, "").slice(0, 64) : "";
      const what = `${where} refused to refresh the token: HTTP ${response.status}${code === "" ? "" : ` ${code}`}`;
      throw new TokenEndpointRefused(response.status >= 500 ? "UNAVAILABLE" : "FAILED_PRECONDITION", what, answer());
    }
    const accessToken = typeof json?.["access_token"] === "string" ? secretOrUndefined(json["access_token"]) : undefined;
    const tokenType = json?.["token_type"];
    if (accessToken === undefined || (typeof tokenType === "string" && tokenType.toLowerCase() !== "bearer")) {
      // The answer may hold a token of another type: it is scrubbed of what we know, and not shown beyond its status.
      throw new TokenEndpointRefused("UNAVAILABLE", `${where} answered without a bearer access_token`, { ...answer(), body: "", bodyTruncated: false });
    }
    const expiresIn = json?.["expires_in"];
    const rotated = json?.["refresh_token"];
    return {
      accessToken,
      refreshToken: typeof rotated === "string" ? secretOrUndefined(rotated) : undefined,
      expiresAt: typeof expiresIn === "number" && expiresIn > 0 ? new Date(Date.now() + expiresIn * 1000) : undefined,
    };
  };
}

/** application/x-www-form-urlencoded, as §2.3.1 asks for the client id and secret in Basic auth. */
function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Only the kind of a network failure travels as the cause (its message may quote the request). */
function errorName(err: unknown): string {
  return err instanceof Error ? err.name : "error";
}

