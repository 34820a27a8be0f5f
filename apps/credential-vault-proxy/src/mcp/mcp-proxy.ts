/**
 * MCP through the proxy: for a session and a server URL, take the session's mcp_oauth credential,
 * get a token that is not about to expire, and talk to the server; if the server rejects the
 * token anyway (revoked, clock skew), refresh once and try again. What comes back is the tools'
 * output with every secret of the credential scrubbed from it.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { MhError } from "@metaharness/errors";
import type { McpTool } from "@metaharness/proto";
import type { Logger } from "@metaharness/service-kit/logging";
import { scrub, type Secret } from "../crypto/secret.js";
import type { SessionCredentials } from "../session/session-credentials.js";
import { McpProtocolError, TokenRejected, requestOptions, withMcpServer, type ConnectOptions } from "./mcp-connection.js";
import type { AccessToken, OAuthTokenSource } from "./token-source.js";

/** Pages of tools/list we follow at most. */
const MAX_TOOL_PAGES = 20;

export interface McpCallResult {
  readonly text: string[];
  readonly isError: boolean;
}

export class McpProxy {
  constructor(
    private readonly deps: {
      readonly credentials: SessionCredentials;
      readonly tokens: OAuthTokenSource;
      readonly fetch: FetchLike;
      readonly timeoutMs: number;
      readonly logger: Logger;
    },
  ) {}

  async listTools(sessionId: string, serverUrl: string, signal: AbortSignal): Promise<McpTool[]> {
    return this.listAll(sessionId, serverUrl, signal).catch((err: unknown) => {
      if (err instanceof McpToolFailure) throw new MhError("FAILED_PRECONDITION", `the MCP server refused tools/list: ${err.message}`);
      throw err;
    });
  }

  private listAll(sessionId: string, serverUrl: string, signal: AbortSignal): Promise<McpTool[]> {
    return this.withServer(sessionId, serverUrl, signal, async (client, opts, secrets) => {
      const tools: McpTool[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_TOOL_PAGES; page++) {
        const res = await client.listTools(cursor === undefined ? {} : { cursor }, requestOptions(opts));
        for (const t of res.tools) {
          tools.push({ name: t.name, description: scrub(t.description ?? "", secrets), inputSchema: { ...t.inputSchema } });
        }
        cursor = res.nextCursor;
        if (cursor === undefined) break;
      }
      return tools;
    });
  }

  /** `sent` is called just before each tools/call request leaves (see mcp/call-ledger.ts). */
  async callTool(
    call: { sessionId: string; serverUrl: string; name: string; args: Record<string, unknown>; callId: string },
    signal: AbortSignal,
    sent: () => void = () => undefined,
  ): Promise<McpCallResult> {
    const log = this.deps.logger.child({ session_id: call.sessionId, call_id: call.callId, server: call.serverUrl, tool: call.name });
    const started = performance.now();
    try {
      const result = await this.withServer(call.sessionId, call.serverUrl, signal, async (client, opts, secrets) => {
        sent();
        const res = await client.callTool({ name: call.name, arguments: call.args }, undefined, requestOptions(opts));
        const blocks: unknown[] = Array.isArray(res.content) ? res.content : [];
        return { text: blocks.map((b) => scrub(blockText(b), secrets)), isError: res.isError === true };
      });
      log.info({ is_error: result.isError, duration_ms: Math.round(performance.now() - started) }, "mcp tool called");
      return result;
    } catch (err) {
      if (!(err instanceof McpToolFailure)) throw err;
      log.info({ is_error: true, mcp_code: err.code, duration_ms: Math.round(performance.now() - started) }, "mcp tool refused the call");
      return { text: [err.message], isError: true };
    }
  }

  private async withServer<T>(
    sessionId: string,
    serverUrl: string,
    signal: AbortSignal,
    work: (client: Client, opts: ConnectOptions, secrets: readonly Secret[]) => Promise<T>,
  ): Promise<T> {
    const { credential, config } = await this.deps.credentials.mcp(sessionId, serverUrl);
    if (config.$case !== "mcpOauth" && config.$case !== "mcpBearer") throw new MhError("INTERNAL", "not an MCP credential");
    const url = config.value.mcpServerUrl;
    const attempt = (token: AccessToken): Promise<T> => {
      const opts = { serverUrl: url, token: token.token, fetch: this.deps.fetch, timeoutMs: this.deps.timeoutMs, signal };
      return withMcpServer(opts, (client) => work(client, opts, token.secrets)).catch((err: unknown) => {
        if (err instanceof McpProtocolError) throw new McpToolFailure(err.code, scrub(err.message, token.secrets));
        throw err;
      });
    };
    const first = await this.deps.tokens.current(credential.credentialId);
    try {
      return await attempt(first);
    } catch (err) {
      if (!(err instanceof TokenRejected)) throw err;
      if (config.$case === "mcpBearer") {
        throw new MhError("FAILED_PRECONDITION", `the MCP server ${url} rejects the session's static bearer credential`);
      }
      this.deps.logger.info({ session_id: sessionId, credential_id: credential.credentialId, server: url }, "the MCP server rejected the token; refreshing it");
      const second = await this.deps.tokens.refresh(credential.credentialId, first.version);
      try {
        return await attempt(second);
      } catch (again) {
        if (!(again instanceof TokenRejected)) throw again;
        throw new MhError("FAILED_PRECONDITION", `the MCP server ${url} rejects the session's credential even after a refresh`);
      }
    }
  }
}

/** A JSON-RPC error of a tool call: the model reads it as the tool's result. */
class McpToolFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

function blockText(block: unknown): string {
  if (typeof block === "object" && block !== null && (block as { type?: unknown }).type === "text") {
    const text = (block as { text?: unknown }).text;
    if (typeof text === "string") return text;
  }
  return JSON.stringify(block);
}
