/**
 * The broker's layer operations: BuildLayer and DescribeLayer (the gateway asks them when an
 * environment is created, updated or read), and the layer a Provision mounts.
 */
import { MhError } from "@metaharness/errors";
import type {
  BuildLayerRequest,
  BuildLayerResponse,
  DescribeLayerRequest,
  DescribeLayerResponse,
  PackageLists,
} from "@metaharness/proto";
import type { Layers } from "./layers.js";
import { layerMount, type LayerMount } from "./mount.js";

function requireLists(lists: PackageLists | undefined): PackageLists {
  if (lists === undefined) throw new MhError("INVALID_ARGUMENT", "packages: required", { field: "packages" });
  return lists;
}

export async function buildLayer(layers: Layers, req: BuildLayerRequest): Promise<BuildLayerResponse> {
  return { layer: await layers.build(requireLists(req.packages), req.retryFailed) };
}

export async function describeLayer(layers: Layers, req: DescribeLayerRequest): Promise<DescribeLayerResponse> {
  const lists = requireLists(req.packages);
  await layers.require(lists, "packages");
  return { layer: await layers.describe(lists) };
}

/** The built layer of `lists`, ready to mount (waits for its build). */
export async function sandboxLayer(layers: Layers, lists: PackageLists, field: string, signal?: AbortSignal): Promise<LayerMount> {
  const info = await layers.ready(lists, field, signal);
  return layerMount(info, layers.mountPoint(info.id));
}
