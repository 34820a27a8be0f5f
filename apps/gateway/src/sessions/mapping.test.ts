/**
 * Params to resolved objects, and a session's agent onto the harness's AgentConfig.
 */
import type { BetaManagedAgentsSessionAgent } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import { PermissionPolicy, ToolKind } from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import { agentBodyFromCreate, applyAgentUpdate } from "../agents/body.js";
import { toAgentConfig } from "../agents/agent-config.js";
import { applyEnvironmentUpdate, environmentBodyFromCreate } from "../environments/body.js";
import { patchMetadata } from "../http/metadata.js";
import { resolveResource, resolveResources } from "./resources.js";

function sessionAgent(tools: BetaManagedAgentsSessionAgent["tools"], mcp: BetaManagedAgentsSessionAgent["mcp_servers"] = []): BetaManagedAgentsSessionAgent {
  return {
    id: "agent_1",
    type: "agent",
    version: 1,
    name: "a",
    description: null,
    model: { id: "claude-x" },
    system: "be brief",
    tools,
    mcp_servers: mcp,
    skills: [],
    execution_identity: { type: "service_account" },
    multiagent: null,
  };
}

describe("agents", () => {
  it("applies updates as the SDK documents: omitted kept, null cleared, metadata patched", () => {
    const body = agentBodyFromCreate({ name: "a", model: "m", description: "d", system: "s", metadata: { a: "1" } });
    const next = applyAgentUpdate(body, { description: null, metadata: { a: null, b: "2" }, system: "" });
    expect(next).toMatchObject({ name: "a", description: null, system: null, metadata: { b: "2" }, model: { id: "m" } });
  });

  it("refuses what it cannot honour", () => {
    expect(() => agentBodyFromCreate({ name: "a", model: "m", execution_identity: { type: "aws_role", role_arn: "arn:x" } })).toThrow(
      /^execution_identity.type: /,
    );
    expect(() => agentBodyFromCreate({ name: "a", model: "m", mcp_servers: [{ type: "url", name: "s", url: "https://mcp.example" }] })).toThrow(
      /^mcp_servers\[0\].name: /,
    );
  });
});

describe("toAgentConfig", () => {
  it("maps enabled sandbox tools with their policies, custom and MCP tools; leaves out web tools", () => {
    const config = toAgentConfig(
      sessionAgent(
        [
          {
            type: "agent_toolset_20260401",
            default_config: { enabled: false, permission_policy: { type: "always_allow" } },
            configs: [
              { name: "bash", type: "bash", enabled: true, permission_policy: { type: "auto" } },
              { name: "read", type: "read", enabled: true, permission_policy: { type: "always_allow" } },
              { name: "web_search", type: "web_search", enabled: true, permission_policy: { type: "always_allow" } },
            ],
          },
          { type: "custom", name: "lookup", description: "look up", input_schema: { type: "object" } },
          {
            type: "mcp_toolset",
            mcp_server_name: "docs",
            default_config: { enabled: true, permission_policy: { type: "always_ask" } },
            configs: [{ name: "search_docs", enabled: true, permission_policy: { type: "always_allow" } }],
          },
        ],
        [{ type: "url", name: "docs", url: "https://mcp.example/docs" }],
      ),
    );
    expect(config).toMatchObject({ model: "claude-x", system: "be brief" });
    expect(config.tools.map((t) => [t.name, t.kind, t.permissionPolicy, t.mcpServerUrl])).toEqual([
      ["bash", ToolKind.TOOL_KIND_SANDBOX, PermissionPolicy.PERMISSION_POLICY_ALWAYS_ASK, ""],
      ["read", ToolKind.TOOL_KIND_SANDBOX, PermissionPolicy.PERMISSION_POLICY_ALWAYS_ALLOW, ""],
      ["lookup", ToolKind.TOOL_KIND_CUSTOM, PermissionPolicy.PERMISSION_POLICY_ALWAYS_ALLOW, ""],
      ["search_docs", ToolKind.TOOL_KIND_MCP, PermissionPolicy.PERMISSION_POLICY_ALWAYS_ALLOW, "https://mcp.example/docs"],
    ]);
    expect(config.tools[2]?.inputSchema).toEqual({ type: "object" });
  });
});

describe("environments", () => {
  it("defaults to limited networking without hosts, and keeps omitted fields on update", () => {
    expect(environmentBodyFromCreate({ name: "e" }).config).toMatchObject({
      type: "cloud",
      networking: { type: "limited", allowed_hosts: [], allow_mcp_servers: false, allow_package_managers: false },
    });
    const body = environmentBodyFromCreate({ name: "e", config: { type: "cloud", networking: { type: "limited", allowed_hosts: ["github.com"] } } });
    const next = applyEnvironmentUpdate(body, { config: { type: "cloud", networking: { type: "limited", allow_mcp_servers: true } } });
    expect(next.config).toMatchObject({
      networking: { type: "limited", allowed_hosts: ["github.com"], allow_package_managers: false, allow_mcp_servers: true },
    });
  });

  it("serves unrestricted networking and the package registries, refuses what the sandbox broker cannot honour, naming the field", () => {
    const create = (config: Parameters<typeof environmentBodyFromCreate>[0]["config"]) => () => environmentBodyFromCreate({ name: "e", config });
    expect(environmentBodyFromCreate({ name: "e", config: { type: "cloud", networking: { type: "unrestricted" } } }).config).toMatchObject({
      networking: { type: "unrestricted" },
    });
    expect(environmentBodyFromCreate({ name: "e", config: { type: "cloud", networking: { type: "limited", allow_package_managers: true } } }).config).toMatchObject({
      networking: { type: "limited", allowed_hosts: [], allow_package_managers: true },
    });
    expect(create({ type: "cloud", networking: { type: "unrestricted" }, packages: { npm: ["x"] } })).not.toThrow();
    // As the SDK documents: packages under limited networking need the package registries.
    expect(create({ type: "cloud", packages: { pip: ["x"] } })).toThrow(/^config.networking.allow_package_managers: must be true when packages are listed/);
    const registries = { type: "limited", allow_package_managers: true } as const;
    expect(create({ type: "cloud", networking: registries, packages: { pip: ["six"], apt: ["cowsay"] } })).not.toThrow();
    expect(create({ type: "cloud", networking: registries, packages: { pip: ["six", "--index-url=http://x"], npm: ["a b"] } })).toThrow(
      /^config.packages.npm\[0\]: "a b" is not a package name.*; config.packages.pip\[1\]: "--index-url=http:\/\/x" is not/,
    );
    const hosts = Array.from({ length: 65 }, (_, i) => `h${i}.example.com`);
    expect(create({ type: "cloud", networking: { type: "limited", allowed_hosts: hosts } })).toThrow(/^config.networking.allowed_hosts: at most 64/);
    expect(environmentBodyFromCreate({ name: "e", config: { type: "self_hosted" } }).config).toEqual({ type: "self_hosted" });
  });
});

describe("metadata", () => {
  it("patches, and reports every limit it breaks", () => {
    expect(patchMetadata({ a: "1" }, { a: "", b: "2" }, { emptyDeletes: true })).toEqual({ b: "2" });
    expect(() => patchMetadata({}, { ["k".repeat(65)]: "v" })).toThrow(/must be 1 to 64 characters/);
  });
});

describe("repository resources", () => {
  const now = new Date("2026-01-02T03:04:05.678Z");
  const CLOUD = { proxied: true, selfHosted: false };
  const repo = (extra: object = {}) => ({ type: "github_repository" as const, url: "https://git.example/org/app.git", ...extra });
  const message = (f: () => unknown): string => {
    try {
      f();
    } catch (err) {
      return (err as Error).message;
    }
    return "accepted";
  };

  it("keeps the token apart from the resource and the log's repository; mount paths are under /workspace", () => {
    const [r] = resolveResources([repo({ authorization_token: "tok", mount_path: "/workspace/a/../b/", checkout: { type: "commit", sha: "abc1234" } })], now, CLOUD);
    expect(r?.token).toBe("tok");
    expect(JSON.stringify(r?.resource)).not.toContain("tok");
    expect(r?.resource).toMatchObject({ mount_path: "/workspace/b", created_at: now.toISOString() });
    expect(r?.repository).toEqual({ resourceId: r?.resource.id, url: "https://git.example/org/app.git", mountPath: "b", checkout: "abc1234" });
    expect(resolveResources([repo()], now, CLOUD)[0]?.repository.mountPath).toBe("app");
  });

  it("refuses what could not be cloned safely, naming the field and never quoting the token", () => {
    const one = (p: object) => message(() => resolveResource(repo(p), "", now, new Set(), CLOUD));
    expect(one({ mount_path: "/workspace" })).toMatch(/^mount_path: /);
    expect(one({ mount_path: "/workspace/../etc" })).toMatch(/^mount_path: /);
    expect(one({ mount_path: "workspace/x" })).toMatch(/^mount_path: /);
    expect(one({ url: "https://u:secret@git.example/a.git" })).toMatch(/^url: must not carry credentials/);
    expect(one({ url: "https://git.example/a.git?x=1" })).toMatch(/^url: /);
    expect(one({ authorization_token: "has space" })).toBe("authorization_token: must be a token of 1-4096 characters without spaces");
    expect(one({ checkout: { type: "branch", name: "-x" } })).toMatch(/^checkout\.name: /);
    expect(message(() => resolveResource(repo(), "", now, new Set(["/workspace/app"]), CLOUD))).toMatch(/^mount_path: /);
    expect(message(() => resolveResources([repo()], now, { proxied: false, selfHosted: false }))).toMatch(/^resources\[0\]: .*MH_CREDENTIAL_PROXY_ADDR/);
    expect(message(() => resolveResources([repo()], now, { proxied: true, selfHosted: true }))).toMatch(/^resources\[0\]: .*self_hosted/);
  });
});
