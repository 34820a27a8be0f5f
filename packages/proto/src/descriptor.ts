/**
 * The compiled descriptor set of every contract (written by `buf build` next to the generated
 * code), loaded as a grpc-js package definition. Server reflection needs it: ts-proto's service
 * definitions carry no descriptors of their own.
 */
import { readFileSync } from "node:fs";
import { loadFileDescriptorSetFromBuffer, type PackageDefinition } from "@grpc/proto-loader";

let cached: PackageDefinition | undefined;

export function loadPackageDefinition(): PackageDefinition {
  cached ??= loadFileDescriptorSetFromBuffer(
    readFileSync(new URL("./gen/metaharness.binpb", import.meta.url)),
    { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true },
  );
  return cached;
}
