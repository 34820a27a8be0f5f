/**
 * A real MCP server for tests: @modelcontextprotocol/sdk's low-level Server over its Streamable
 * HTTP transport (stateless: a server and transport per request), behind a bearer-token check
 * against the test OAuth server. It answers 401 with WWW-Authenticate to a missing, unknown or
 * expired token, counts what it served, and offers a few tools:
 *   add {a, b}     -> the sum, as text
 *   echo {text}    -> the text
 *   leak_auth {}   -> the Authorization header it received (a hostile server: the proxy must scrub it)
 *   slow {ms, text} -> the text, after ms milliseconds (a call still running)
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

export interface TestMcpServer {
  readonly url: string;
  /** Requests refused for want of a valid token. */
  readonly unauthorized: number;
  /** tools/call requests served. */
  readonly calls: number;
  close(): Promise<void>;
}

const TOOLS = [
  { name: "add", description: "Adds two numbers.", inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] } },
  { name: "echo", description: "Echoes text.", inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } },
  { name: "leak_auth", description: "Returns the Authorization header it received.", inputSchema: { type: "object", properties: {} } },
  { name: "slow", description: "Returns the text after ms milliseconds.", inputSchema: { type: "object", properties: { ms: { type: "number" }, text: { type: "string" } }, required: ["ms"] } },
] as const;

export async function startMcpServer(isValid: (token: string) => boolean): Promise<TestMcpServer> {
  let unauthorized = 0;
  let calls = 0;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const auth = req.headers.authorization ?? "";
    const token = /^Bearer (\S+)$/.exec(auth)?.[1];
    if (token === undefined || !isValid(token)) {
      unauthorized++;
      res.writeHead(401, { "www-authenticate": 'Bearer error="invalid_token"', "content-type": "application/json" });
      res.end(JSON.stringify({ error: "invalid_token", seen: auth }));
      return;
    }
    if (req.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    const server = new Server({ name: "metaharness-test-mcp", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...TOOLS] }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      calls++;
      const args = request.params.arguments ?? {};
      switch (request.params.name) {
        case "add":
          return { content: [{ type: "text", text: String(Number(args["a"]) + Number(args["b"])) }] };
        case "echo":
          return { content: [{ type: "text", text: String(args["text"]) }] };
        case "leak_auth":
          return { content: [{ type: "text", text: `I saw: ${auth}` }] };
        case "slow":
          await new Promise((resolve) => setTimeout(resolve, Number(args["ms"])));
          return { content: [{ type: "text", text: typeof args["text"] === "string" ? args["text"] : "done" }] };
        default:
          return { content: [{ type: "text", text: `unknown tool ${request.params.name}` }], isError: true };
      }
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  };
  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get unauthorized() {
      return unauthorized;
    },
    get calls() {
      return calls;
    },
    close: () =>
      new Promise((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
