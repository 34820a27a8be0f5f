import { describe, expect, it } from "vitest";
import type { McpOAuthCredential } from "@metaharness/proto";
import { Secret } from "../crypto/secret.js";
import { TokenEndpointRefused, refreshGrant } from "./oauth-refresh.js";

const CONFIG: McpOAuthCredential = {
  mcpServerUrl: "https://mcp.test/mcp",
  expiresAt: undefined,
  clientId: "mh-client",
  tokenEndpoint: "https://auth.test/token",
  tokenEndpointAuthMethod: "client_secret_basic",
  scope: "",
  resource: undefined,
};
const SECRET = { refreshToken: new Secret("refresh_tok_0123456789"), clientSecret: new Secret("client secret/+x") };

describe("refreshGrant", () => {
  it("reads a token endpoint's answer only up to its bound (an endless body does not hang or fill memory)", async () => {
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 16 * 1024;
        controller.enqueue(new Uint8Array(16 * 1024).fill(0x61));
      },
    });
    const refresh = refreshGrant(5_000, () => Promise.resolve(new Response(endless, { status: 400, headers: { "content-type": "text/plain" } })));
    const err = await refresh(CONFIG, SECRET).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenEndpointRefused);
    const shown = (err as TokenEndpointRefused).httpResponse;
    expect(shown.statusCode).toBe(400);
    expect(shown.bodyTruncated).toBe(true);
    expect(pulled).toBeLessThanOrEqual(256 * 1024);
  });

  it("shows an echoing endpoint's answer without the client secret, even base64- or form-encoded", async () => {
    const echo = (_url: string | URL, init?: RequestInit): Promise<Response> => {
      const headers = new Headers(init?.headers);
      const body = `auth=${headers.get("authorization") ?? ""} body=${init?.body instanceof URLSearchParams ? init.body.toString() : ""}`;
      return Promise.resolve(new Response(body, { status: 401 }));
    };
    for (const method of ["client_secret_basic", "client_secret_post"]) {
      const err = await refreshGrant(5_000, echo)({ ...CONFIG, tokenEndpointAuthMethod: method }, SECRET).catch((e: unknown) => e);
      const body = (err as TokenEndpointRefused).httpResponse.body;
      expect(body, method).toContain("[redacted]");
      expect(body, method).not.toContain("refresh_tok_0123");
      for (const form of ["client secret", "client+secret", "client%20secret"]) expect(body, method).not.toContain(form);
      const basic = /Basic (\S+)/.exec(body)?.[1];
      if (basic !== undefined) expect(Buffer.from(basic.replace("[redacted]", ""), "base64").toString("latin1"), method).not.toContain("secret");
    }
  });
});
