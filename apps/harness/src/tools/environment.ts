/**
 * The session's environment (SessionMetadata.environment, snapshotted by the gateway), as the
 * harness acts on it: a self-hosted environment's tools run on its workers, not in the broker;
 * a cloud environment's networking becomes its sandboxes' NetworkPolicy.
 */
import { hasPackages } from "@metaharness/events";
import {
  EnvironmentNetworking,
  EnvironmentType,
  NetworkMode,
  ToolKind,
  type NetworkPolicy,
  type PackageLists,
  type SessionMetadata,
} from "@metaharness/proto";

export function isSelfHosted(metadata: SessionMetadata | undefined): boolean {
  return metadata?.environment?.type === EnvironmentType.ENVIRONMENT_TYPE_SELF_HOSTED;
}

/** The host (with a non-default port) of each MCP server the agent's tools call. */
function mcpHosts(metadata: SessionMetadata): string[] {
  return (metadata.agent?.tools ?? [])
    .filter((t) => t.kind === ToolKind.TOOL_KIND_MCP && URL.canParse(t.mcpServerUrl))
    .map((t) => new URL(t.mcpServerUrl).host);
}

/**
 * The network of the session's sandboxes: undefined (none) unless the environment's networking
 * gives some: `unrestricted` (public addresses, through the egress proxy), or `limited` with hosts
 * or the package registries.
 */
export function sandboxNetwork(metadata: SessionMetadata | undefined): NetworkPolicy | undefined {
  const env = metadata?.environment;
  if (metadata === undefined || env === undefined || env.type !== EnvironmentType.ENVIRONMENT_TYPE_CLOUD) return undefined;
  if (env.networking === EnvironmentNetworking.ENVIRONMENT_NETWORKING_UNRESTRICTED) {
    return { mode: NetworkMode.NETWORK_MODE_UNRESTRICTED, allowedHosts: [], allowPackageManagers: false };
  }
  const hosts = [...env.allowedHosts, ...(env.allowMcpServers ? mcpHosts(metadata) : [])].map((h) => h.toLowerCase());
  const allowedHosts = [...new Set(hosts)];
  if (allowedHosts.length === 0 && !env.allowPackageManagers) return undefined;
  return { mode: NetworkMode.NETWORK_MODE_ALLOWLIST, allowedHosts, allowPackageManagers: env.allowPackageManagers };
}

/** The packages of a cloud environment, whose layer every sandbox of the session mounts; undefined when none. */
export function sandboxPackages(metadata: SessionMetadata | undefined): PackageLists | undefined {
  const env = metadata?.environment;
  if (env?.type !== EnvironmentType.ENVIRONMENT_TYPE_CLOUD) return undefined;
  return hasPackages(env.packages) ? env.packages : undefined;
}
