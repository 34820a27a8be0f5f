/**
 * What an environment's config means to the services behind the gateway. A `cloud` config
 * becomes the sandboxes' network (the harness maps the snapshot onto the broker's NetworkPolicy);
 * a `self_hosted` config sends the session's tools to the environment's workers. `unrestricted`
 * networking reaches public addresses, and `allow_package_managers` the public package
 * registries, through the credential proxy's egress (CONNECT tunnels). What the broker cannot do
 * is refused here, naming the field and why, instead of being stored and ignored. `packages` are
 * built by the sandbox broker into a layer every sandbox of the environment mounts
 * (package-layers.ts); each entry is checked here first, by the rule the broker applies.
 */
import type { BetaCloudConfig, BetaSelfHostedConfig } from "@anthropic-ai/sdk/resources/beta/environments/environments";
import {
  EnvironmentNetworking,
  EnvironmentType,
  type EnvironmentConfig as EnvironmentSnapshot,
} from "@metaharness/proto";
import { hasPackages, packageProblems } from "@metaharness/events";
import { invalidRequest, type ApiError } from "../errors/api-error.js";
import { packagesOf } from "./package-layers.js";

export type EnvironmentConfig = BetaCloudConfig | BetaSelfHostedConfig;

/** The broker's allowlist limit (sandbox-broker resources.ts MAX_ALLOWED_HOSTS). */
export const MAX_ALLOWED_HOSTS = 64;
export { PACKAGE_MANAGERS } from "@metaharness/events";

/** Why the broker cannot honour `config`, as the 400 to answer; undefined when it can. */
export function unhonoured(config: EnvironmentConfig): ApiError | undefined {
  if (config.type === "self_hosted") return undefined;
  const net = config.networking;
  if (net.type === "unrestricted") return packagesRefusal(config);
  if (net.allowed_hosts.length > MAX_ALLOWED_HOSTS) {
    return invalidRequest("config.networking.allowed_hosts", `at most ${MAX_ALLOWED_HOSTS} hosts (the sandbox egress allowlist's limit)`);
  }
  return packagesRefusal(config);
}

/**
 * Malformed package entries, every one named; and, as the SDK documents, packages under `limited`
 * networking need `allow_package_managers` (the agent's own installs reach the registries then).
 */
function packagesRefusal(config: BetaCloudConfig): ApiError | undefined {
  const problems = packageProblems(config.packages);
  if (problems.length > 0) return invalidRequest("", problems.map((p) => `config.packages.${p.field}: ${p.message}`).join("; "));
  if (hasPackages(config.packages) && config.networking.type === "limited" && !config.networking.allow_package_managers) {
    return invalidRequest("config.networking.allow_package_managers", "must be true when packages are listed under limited networking");
  }
  return undefined;
}

/** The config, and the hand kind its metadata names (hand.ts), as the session log's metadata carries them to the harness. */
export function toEnvironmentSnapshot(config: EnvironmentConfig, handKind = ""): EnvironmentSnapshot {
  if (config.type === "self_hosted") {
    return {
      type: EnvironmentType.ENVIRONMENT_TYPE_SELF_HOSTED,
      networking: EnvironmentNetworking.ENVIRONMENT_NETWORKING_UNSPECIFIED,
      allowedHosts: [],
      allowMcpServers: false,
      allowPackageManagers: false,
      packages: undefined,
      handKind: "",
    };
  }
  const net = config.networking;
  const packages = packagesOf(config);
  return net.type === "unrestricted"
    ? {
        type: EnvironmentType.ENVIRONMENT_TYPE_CLOUD,
        networking: EnvironmentNetworking.ENVIRONMENT_NETWORKING_UNRESTRICTED,
        allowedHosts: [],
        allowMcpServers: false,
        allowPackageManagers: false,
        packages,
        handKind,
      }
    : {
        type: EnvironmentType.ENVIRONMENT_TYPE_CLOUD,
        networking: EnvironmentNetworking.ENVIRONMENT_NETWORKING_LIMITED,
        allowedHosts: [...net.allowed_hosts],
        allowMcpServers: net.allow_mcp_servers,
        allowPackageManagers: net.allow_package_managers,
        packages,
        handKind,
      };
}
