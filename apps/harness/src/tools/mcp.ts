/**
 * MCP tools, as the harness sees them: `call(server, name, input) -> string` through the
 * credential vault proxy, which holds the session's OAuth tokens, refreshes them, and talks to the
 * MCP server. The harness never sees a token; it presents only its own service token to the proxy.
 * A failure is a tool error the model reads, except a cancellation (an interrupt), which propagates.
 */
import { MhError } from "@metaharness/errors";
import { CredentialVaultProxyClient, CredentialVaultProxyService } from "@metaharness/proto";
import { createClient, promisify, readServiceToken, type PromiseClient } from "@metaharness/service-kit/grpc";
import type { ChannelCredentials } from "@grpc/grpc-js";
import type { ToolOutcome } from "./sandbox.js";

export type CredentialProxyClient = PromiseClient<typeof CredentialVaultProxyService>;

/** How long one MCP tool call may take through the proxy. */
export const MCP_CALL_DEADLINE_MS = 10 * 60_000;

export class McpPort {
  constructor(
    private readonly proxy: CredentialProxyClient,
    private readonly sessionId: string,
  ) {}

  async call(serverUrl: string, name: string, input: Record<string, unknown>, callId: string, signal: AbortSignal): Promise<ToolOutcome> {
    if (serverUrl === "") return { output: `the MCP tool "${name}" has no mcp_server_url in the agent configuration`, isError: true };
    try {
      const res = await this.proxy.callMcpTool(
        { sessionId: this.sessionId, mcpServerUrl: serverUrl, name, arguments: input, callId },
        { signal, deadlineMs: MCP_CALL_DEADLINE_MS },
      );
      return { output: res.text.join("\n"), isError: res.isError };
    } catch (err) {
      const e = MhError.from(err);
      if (e.code === "CANCELLED") throw e;
      return { output: `MCP error (${e.code}): ${e.message}`, isError: true };
    }
  }
}

/** A client of the proxy at `address` presenting the service token read from `tokenFile`, over `credentials` (TLS or not). */
export async function credentialProxyClient(
  address: string,
  tokenFile: string,
  credentials: ChannelCredentials,
): Promise<{ client: CredentialProxyClient; close(): void }> {
  const raw = createClient(CredentialVaultProxyClient, address, { bearerToken: await readServiceToken(tokenFile), credentials });
  return { client: promisify(raw, CredentialVaultProxyService), close: () => raw.close() };
}
