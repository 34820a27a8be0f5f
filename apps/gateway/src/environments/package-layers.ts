/**
 * Environments' packages, as the gateway sees them: the sandbox broker builds each list's layer
 * (apps/sandbox-broker src/layers). Creating or updating an environment with packages asks the
 * broker to build (or to try again after a failure) before anything is stored, so lists the broker
 * refuses (a malformed entry, a manager this machine cannot reach) are a 400 naming the field and
 * store nothing. The layer's state is shown on every environment the API returns, in metadata
 * keys of our own (the SDK's BetaEnvironment has no status field): see docs/api.md.
 */
import type { BetaCloudConfig, BetaSelfHostedConfig } from "@anthropic-ai/sdk/resources/beta/environments/environments";
import { MhError } from "@metaharness/errors";
import { hasPackages } from "@metaharness/events";
import { LayerState, type Layer, type PackageLists } from "@metaharness/proto";
import type { SandboxBrokerRpc } from "../clients.js";
import { invalidRequest } from "../errors/api-error.js";
import { MAX_METADATA_VALUE_LENGTH } from "../http/metadata.js";

type EnvironmentConfig = BetaCloudConfig | BetaSelfHostedConfig;

/** Metadata keys of environments that only the gateway writes: the layer's state. */
export const STATUS_PREFIX = "metaharness.";
export const STATUS_KEYS = {
  status: "metaharness.packages.status",
  layer: "metaharness.packages.layer_id",
  manager: "metaharness.packages.failed_manager",
  error: "metaharness.packages.error",
  size: "metaharness.packages.size_bytes",
  buildMs: "metaharness.packages.build_ms",
} as const;

const STATE_NAMES: Readonly<Record<number, string>> = {
  [LayerState.LAYER_STATE_ABSENT]: "pending",
  [LayerState.LAYER_STATE_BUILDING]: "building",
  [LayerState.LAYER_STATE_READY]: "ready",
  [LayerState.LAYER_STATE_FAILED]: "failed",
};

/** The packages of a cloud config with any; undefined otherwise. */
export function packagesOf(config: EnvironmentConfig): PackageLists | undefined {
  if (config.type !== "cloud" || !hasPackages(config.packages)) return undefined;
  const p: BetaCloudConfig["packages"] = config.packages;
  return { apt: p.apt, cargo: p.cargo, gem: p.gem, go: p.go, npm: p.npm, pip: p.pip };
}

export class PackageLayers {
  constructor(private readonly broker: SandboxBrokerRpc | undefined) {}

  /** Starts the layer of `config`'s packages (again, if its last build failed); throws the 400 of lists the broker refuses. */
  async build(config: EnvironmentConfig): Promise<void> {
    const packages = packagesOf(config);
    if (packages === undefined) return;
    if (this.broker === undefined) {
      throw invalidRequest("config.packages", "cannot be built: this gateway has no sandbox broker configured (MH_SANDBOX_BROKER_ADDR)");
    }
    try {
      await this.broker.buildLayer({ packages, retryFailed: true });
    } catch (err) {
      const e = MhError.from(err);
      if (e.code === "INVALID_ARGUMENT" && e.field !== undefined) {
        // The broker names every entry at fault ("packages.pip[0]: ...; packages.gem: ..."): under config here.
        throw invalidRequest("", e.message.replace(/(^|; )packages\./g, "$1config.packages."));
      }
      throw e;
    }
  }

  /** The metadata keys that show the layer's state; `unknown` when the broker cannot say now. */
  async status(config: EnvironmentConfig): Promise<Record<string, string>> {
    const packages = packagesOf(config);
    if (packages === undefined) return {};
    let layer: Layer | undefined;
    try {
      layer = (await this.broker?.describeLayer({ packages }, { deadlineMs: 5_000 }))?.layer;
    } catch {
      layer = undefined;
    }
    if (layer === undefined) return { [STATUS_KEYS.status]: "unknown" };
    const out: Record<string, string> = { [STATUS_KEYS.status]: STATE_NAMES[layer.state] ?? "unknown", [STATUS_KEYS.layer]: layer.layerId };
    if (layer.state === LayerState.LAYER_STATE_READY) {
      out[STATUS_KEYS.size] = String(layer.sizeBytes);
      out[STATUS_KEYS.buildMs] = String(layer.buildMs);
    }
    if (layer.state === LayerState.LAYER_STATE_FAILED) {
      out[STATUS_KEYS.manager] = layer.manager;
      // The output's end says most: what failed last.
      out[STATUS_KEYS.error] = layer.output.length > MAX_METADATA_VALUE_LENGTH ? `…${layer.output.slice(-(MAX_METADATA_VALUE_LENGTH - 1))}` : layer.output;
    }
    return out;
  }
}
