/**
 * The session's environment (SessionMetadata.environment, snapshotted by the gateway), as the
 * harness acts on it: a self-hosted environment's tools run on its workers, not in the broker;
 * a cloud environment's networking becomes its sandboxes' NetworkPolicy. What the broker cannot
 * give (the gateway refuses it at creation, but a session may be created by any log client) is
 * refused at provisioning, never run as something else.
 */
import { MhError } from "@metaharness/errors";
import {
  EnvironmentNetworking,
  EnvironmentType,
  NetworkMode,
  ToolKind,
  type NetworkPolicy,
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
 * The network of the session's sandboxes: undefined (none) unless limited networking names
 * hosts. Throws FAILED_PRECONDITION, naming the environment's field, for what cannot be given.
 */
export function sandboxNetwork(metadata: SessionMetadata | undefined): NetworkPolicy | undefined {
  const env = metadata?.environment;
  if (metadata === undefined || env === undefined || env.type !== EnvironmentType.ENVIRONMENT_TYPE_CLOUD) return undefined;
  const refuse = (field: string, why: string): MhError =>
    new MhError("FAILED_PRECONDITION", `environment ${metadata.environmentId}: ${field} cannot be honoured: ${why}`, { field });
  if (env.networking === EnvironmentNetworking.ENVIRONMENT_NETWORKING_UNRESTRICTED) {
    throw refuse("config.networking.type", "the sandbox broker gives sandboxes no network but an allowlist");
  }
  if (env.allowPackageManagers) {
    throw refuse("config.networking.allow_package_managers", "the sandbox egress relays plain HTTP only, without CONNECT tunnels");
  }
  const hosts = [...env.allowedHosts, ...(env.allowMcpServers ? mcpHosts(metadata) : [])].map((h) => h.toLowerCase());
  const allowedHosts = [...new Set(hosts)];
  return allowedHosts.length === 0 ? undefined : { mode: NetworkMode.NETWORK_MODE_ALLOWLIST, allowedHosts };
}
