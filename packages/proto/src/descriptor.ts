/**
 * The compiled descriptor set of every contract (written by `buf build` next to the generated
 * code), loaded as a grpc-js package definition. Server reflection needs it: ts-proto's service
 * definitions carry no descriptors of their own.
 *
 * proto-loader derives each type's `fileDescriptorProtos` from protobufjs, which drops a file's
 * imports (`dependency`): reflection then served session_log.proto referring to
 * google.protobuf.Timestamp without importing it, and grpcurl and ghz refused it ("unresolvable
 * reference"; grpc/grpc-node#2958). So reflection is given buf's own file descriptors, byte for
 * byte, imports included, which it indexes by file name and symbol.
 */
import { readFileSync } from "node:fs";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema, type FileDescriptorSet } from "@bufbuild/protobuf/wkt";
import { loadFileDescriptorSetFromBuffer, type PackageDefinition } from "@grpc/proto-loader";

let cached: PackageDefinition | undefined;
let cachedHealth: PackageDefinition | undefined;

/** Every contract of /proto, for reflection. */
export function loadPackageDefinition(): PackageDefinition {
  cached ??= load("metaharness.binpb");
  return cached;
}

/**
 * grpc.health.v1 (the health service grpc-health-check implements), for reflection. Loading its
 * .proto with proto-loader instead would serve protobufjs's reconstruction, whose map entry
 * `Statuses` (not `StatusesEntry`) Go clients refuse: grpcurl and ghz could not call Check.
 */
export function loadHealthPackageDefinition(): PackageDefinition {
  cachedHealth ??= load("health.binpb");
  return cachedHealth;
}

let cachedContracts: FileDescriptorSet | undefined;

/** Every contract of /proto as buf's descriptor set, imports included (read once). */
export function contractDescriptorSet(): FileDescriptorSet {
  cachedContracts ??= fromBinary(FileDescriptorSetSchema, readSet("metaharness.binpb"));
  return cachedContracts;
}

function readSet(file: string): Buffer {
  return readFileSync(new URL(`./gen/${file}`, import.meta.url));
}

function load(file: string): PackageDefinition {
  const set = readSet(file);
  const definition = loadFileDescriptorSetFromBuffer(set, {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const parsed = file === "metaharness.binpb" ? contractDescriptorSet() : fromBinary(FileDescriptorSetSchema, set);
  const files = parsed.file.map((f) => Buffer.from(toBinary(FileDescriptorProtoSchema, f)));
  // @grpc/reflection keeps the first descriptor it meets of each file name, visiting entries in
  // order: buf's files on the first entry are the ones it serves. (Putting them on every entry
  // made it decode them 169 times: 0.4 s more at each service's start.)
  const first = Object.values(definition).find((e) => "fileDescriptorProtos" in e && Array.isArray(e.fileDescriptorProtos));
  if (first !== undefined && "fileDescriptorProtos" in first) first.fileDescriptorProtos = files;
  return definition;
}
