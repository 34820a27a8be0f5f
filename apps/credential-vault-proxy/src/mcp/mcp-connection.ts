/**
 * One conversation with an MCP server over Streamable HTTP, authenticated by a bearer token:
 * connect (initialize), do the work, close. The token goes into the transport's request headers
 * and nowhere else; failures become MhErrors that name the server and the HTTP status, never
 * the server's response text (which might quote the request).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { MhError } from "@metaharness/errors";
import type { Secret } from "../crypto/secret.js";
import { egressRefusal } from "../net/egress-policy.js";

export const CLIENT_INFO = { name: "metaharness-credential-vault-proxy", version: "0.1.0" } as const;

/** The server refused the token: refresh it and try once more. */
export class TokenRejected extends Error {
  override readonly name = "TokenRejected";
}

export interface ConnectOptions {
  readonly serverUrl: string;
  readonly token: Secret;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  /** The transport's fetch: the egress policy's (a validation probe wraps it to record the responses). */
  readonly fetch: FetchLike;
}

export async function withMcpServer<T>(opts: ConnectOptions, work: (client: Client) => Promise<T>): Promise<T> {
  const transport = new StreamableHTTPClientTransport(new URL(opts.serverUrl), {
    requestInit: { headers: { authorization: `Bearer ${opts.token.reveal()}` } },
    fetch: opts.fetch,
  });
  const client = new Client(CLIENT_INFO);
  try {
    await client.connect(transport, { signal: opts.signal, timeout: opts.timeoutMs });
    return await work(client);
  } catch (err) {
    throw classify(err, opts.serverUrl);
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** Requests of `work` should pass these, so every one is bounded and cancellable. */
export function requestOptions(opts: ConnectOptions): { signal: AbortSignal; timeout: number } {
  return { signal: opts.signal, timeout: opts.timeoutMs };
}

function classify(err: unknown, serverUrl: string): Error {
  if (err instanceof TokenRejected || err instanceof MhError) return err;
  const refused = egressRefusal(err);
  if (refused !== undefined) return refused;
  if (err instanceof StreamableHTTPError) {
    const status = err.code ?? 0;
    if (status === 401) return new TokenRejected(`the MCP server ${serverUrl} answered HTTP 401`);
    const code = status >= 500 || status <= 0 ? "UNAVAILABLE" : "FAILED_PRECONDITION";
    return new MhError(code, `the MCP server ${serverUrl} answered HTTP ${status}`);
  }
  if (err instanceof McpError) {
    if (err.code === (ErrorCode.RequestTimeout as number)) {
      return new MhError("DEADLINE_EXCEEDED", `the MCP server ${serverUrl} did not answer in time`);
    }
    return new McpProtocolError(err.code, err.message);
  }
  if (err instanceof Error && err.name === "AbortError") return new MhError("CANCELLED", "the call was cancelled");
  return new MhError("UNAVAILABLE", `the MCP server ${serverUrl} could not be reached`, { cause: errorKind(err) });
}

/** A JSON-RPC error the server sent (unknown tool, bad arguments, ...). */
export class McpProtocolError extends Error {
  override readonly name = "McpProtocolError";
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

function errorKind(err: unknown): string {
  return err instanceof Error ? `${err.name}${"code" in err && typeof err.code === "string" ? ` ${err.code}` : ""}` : "error";
}
