/**
 * A session's environment onto its sandboxes' network: limited hosts (and the agent's MCP
 * servers when allowed) become an allowlist, with the package registries when allowed; no hosts
 * no network; unrestricted networking an unrestricted sandbox.
 */
import { describe, expect, it } from "vitest";
import {
  EnvironmentNetworking,
  EnvironmentType,
  NetworkMode,
  ToolKind,
  type EnvironmentConfig,
  type SessionMetadata,
} from "@metaharness/proto";
import { isSelfHosted, sandboxNetwork } from "./environment.js";

const cloud = (config: Partial<EnvironmentConfig>): SessionMetadata => ({
  agentId: "agent_1",
  agentVersion: 1,
  tenant: "t",
  labels: {},
  harness: "",
  workspaceFork: undefined,
  environmentId: "env_1",
  vaultIds: [],
  title: "",
  repositories: [],
  agent: {
    model: "",
    system: "",
    tools: [
      { name: "search", kind: ToolKind.TOOL_KIND_MCP, description: "", inputSchema: undefined, permissionPolicy: 0, mcpServerUrl: "https://MCP.example.com:8443/mcp" },
    ],
    tokenBudget: 0,
    contextStrategy: "",
    contextWindowTokens: 0,
    maxTokens: 0,
    explicitTools: true,
    listPrice: undefined,
    budget: undefined,
  },
  environment: {
    type: EnvironmentType.ENVIRONMENT_TYPE_CLOUD,
    networking: EnvironmentNetworking.ENVIRONMENT_NETWORKING_LIMITED,
    allowedHosts: [],
    allowMcpServers: false,
    allowPackageManagers: false,
    packages: undefined,
    handKind: "",
    ...config,
  },
});

describe("sandboxNetwork", () => {
  it("allows the listed hosts, and the MCP servers' when asked; none is no network", () => {
    expect(sandboxNetwork(cloud({}))).toBeUndefined();
    expect(sandboxNetwork({ ...cloud({}), environment: undefined })).toBeUndefined();
    expect(sandboxNetwork(cloud({ allowedHosts: ["API.example.com", "*.cdn.example"] }))).toEqual({
      mode: NetworkMode.NETWORK_MODE_ALLOWLIST,
      allowedHosts: ["api.example.com", "*.cdn.example"],
      allowPackageManagers: false,
    });
    expect(sandboxNetwork(cloud({ allowMcpServers: true }))?.allowedHosts).toEqual(["mcp.example.com:8443"]);
  });

  it("gives the package registries, alone or with hosts, and unrestricted networking", () => {
    expect(sandboxNetwork(cloud({ allowPackageManagers: true }))).toEqual({ mode: NetworkMode.NETWORK_MODE_ALLOWLIST, allowedHosts: [], allowPackageManagers: true });
    expect(sandboxNetwork(cloud({ allowPackageManagers: true, allowedHosts: ["a.example"] }))?.allowedHosts).toEqual(["a.example"]);
    expect(sandboxNetwork(cloud({ networking: EnvironmentNetworking.ENVIRONMENT_NETWORKING_UNRESTRICTED, allowedHosts: ["ignored.example"] }))).toEqual({
      mode: NetworkMode.NETWORK_MODE_UNRESTRICTED,
      allowedHosts: [],
      allowPackageManagers: false,
    });
  });

  it("tells a self-hosted environment apart", () => {
    const selfHosted = cloud({ type: EnvironmentType.ENVIRONMENT_TYPE_SELF_HOSTED });
    expect(isSelfHosted(selfHosted)).toBe(true);
    expect(isSelfHosted(cloud({}))).toBe(false);
    expect(sandboxNetwork(selfHosted)).toBeUndefined();
  });
});
