/**
 * Environments from create and update params to the stored form and the object the API
 * returns. A `cloud` config is resolved in full (networking, every package list), so what is
 * stored is what the sandbox broker is asked for; on update, omitted fields keep their value, as
 * the SDK documents. A config the broker cannot honour is refused (environment-config.ts). The
 * default is `limited` networking with no hosts, which is what a sandbox gets: no network.
 */
import type {
  BetaCloudConfigParams,
  BetaEnvironment,
  BetaLimitedNetwork,
  BetaPackages,
  BetaPackagesParams,
  BetaSelfHostedConfigParams,
  BetaUnrestrictedNetwork,
  EnvironmentCreateParams,
  EnvironmentUpdateParams,
} from "@anthropic-ai/sdk/resources/beta/environments/environments";
import { ApiError, invalidRequest } from "../errors/api-error.js";
import { PACKAGE_MANAGERS, unhonoured, type EnvironmentConfig } from "./environment-config.js";
import { checkMetadata, patchMetadata } from "../http/metadata.js";
import { STATUS_PREFIX } from "./package-layers.js";

export type EnvironmentCreateBody = Omit<EnvironmentCreateParams, "betas" | "workspace_id">;
export type EnvironmentUpdateBody = Omit<EnvironmentUpdateParams, "betas" | "workspace_id">;
type ConfigParams = BetaCloudConfigParams | BetaSelfHostedConfigParams;
type Network = BetaUnrestrictedNetwork | BetaLimitedNetwork;

export type EnvironmentBody = Pick<BetaEnvironment, "name" | "description" | "config" | "metadata"> & { scope: "organization" };

export interface EnvironmentRecord {
  readonly id: string;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly archivedAt: Date | null;
  readonly body: EnvironmentBody;
}

/** A hostname, optionally with a leading `*.` wildcard; no scheme, port or path. */
const HOST = /^(\*\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

const EMPTY_PACKAGES: BetaPackages = { type: "packages", apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] };
const NO_NETWORK: BetaLimitedNetwork = { type: "limited", allowed_hosts: [], allow_mcp_servers: false, allow_package_managers: false };

function packagesOf(params: BetaPackagesParams | null | undefined, current: BetaPackages): BetaPackages {
  if (params === null || params === undefined) return current;
  const out: BetaPackages = { ...current, type: "packages" };
  for (const manager of PACKAGE_MANAGERS) {
    const list = params[manager];
    if (list !== undefined && list !== null) out[manager] = [...list];
  }
  return out;
}

function networkOf(params: BetaCloudConfigParams["networking"], current: Network | undefined): Network {
  if (params === null || params === undefined) return current ?? NO_NETWORK;
  if (params.type === "unrestricted") return { type: "unrestricted" };
  const prior = current?.type === "limited" ? current : undefined;
  const hosts = params.allowed_hosts ?? prior?.allowed_hosts ?? [];
  for (const [i, host] of hosts.entries()) {
    if (!HOST.test(host)) throw invalidRequest(`config.networking.allowed_hosts[${i}]`, `"${host}" is not a hostname (no scheme, port or path)`);
  }
  return {
    type: "limited",
    allowed_hosts: [...hosts],
    allow_mcp_servers: params.allow_mcp_servers ?? prior?.allow_mcp_servers ?? false,
    allow_package_managers: params.allow_package_managers ?? prior?.allow_package_managers ?? false,
  };
}

/** The config resolved from params over `current`; throws the 400 of one the broker cannot honour. */
function configOf(params: ConfigParams | null | undefined, current: EnvironmentConfig | undefined): EnvironmentConfig {
  const config = resolveConfig(params, current);
  const refused = unhonoured(config);
  if (refused !== undefined) throw refused;
  return config;
}

function resolveConfig(params: ConfigParams | null | undefined, current: EnvironmentConfig | undefined): EnvironmentConfig {
  if (params === null || params === undefined) {
    return current ?? { type: "cloud", networking: NO_NETWORK, packages: EMPTY_PACKAGES };
  }
  if (current !== undefined && params.type !== current.type) {
    throw new ApiError("invalid_config_type_change", `config.type: cannot change from "${current.type}" to "${params.type}"`);
  }
  if (params.type === "self_hosted") return { type: "self_hosted" };
  const prior = current?.type === "cloud" ? current : undefined;
  return {
    type: "cloud",
    networking: networkOf(params.networking, prior?.networking),
    packages: packagesOf(params.packages, prior?.packages ?? EMPTY_PACKAGES),
  };
}

function scopeOf(scope: "organization" | "account" | null | undefined): "organization" {
  if (scope === "account") throw invalidRequest("scope", '"account" is not supported: environments are visible to the whole tenant');
  return "organization";
}

export function environmentBodyFromCreate(p: EnvironmentCreateBody): EnvironmentBody {
  return {
    name: p.name,
    description: p.description ?? null,
    config: configOf(p.config, undefined),
    metadata: ownMetadata(checkMetadata(p.metadata ?? {})),
    scope: scopeOf(p.scope),
  };
}

export function applyEnvironmentUpdate(current: EnvironmentBody, p: EnvironmentUpdateBody): EnvironmentBody {
  return {
    name: p.name ?? current.name,
    description: p.description === undefined ? current.description : p.description,
    config: configOf(p.config, current.config),
    metadata: ownMetadata(patchMetadata(current.metadata, p.metadata, { emptyDeletes: true })),
    scope: p.scope === undefined ? current.scope : scopeOf(p.scope),
  };
}

/** Keys under STATUS_PREFIX show the packages' layer (package-layers.ts): a client cannot set them. */
function ownMetadata(metadata: Record<string, string>): Record<string, string> {
  const reserved = Object.keys(metadata).filter((k) => k.startsWith(STATUS_PREFIX));
  if (reserved.length > 0) {
    throw new ApiError("invalid_metadata", `metadata: ${reserved.map((k) => JSON.stringify(k)).join(", ")}: keys starting with "${STATUS_PREFIX}" are reserved (they show the packages' build)`);
  }
  return metadata;
}

export function renderEnvironment(record: EnvironmentRecord): BetaEnvironment {
  return {
    id: record.id,
    type: "environment",
    ...record.body,
    created_at: record.createdAt.toISOString(),
    updated_at: record.updatedAt.toISOString(),
    archived_at: record.archivedAt?.toISOString() ?? null,
  };
}
