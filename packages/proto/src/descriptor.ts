/**
 * The compiled descriptor set of every contract (written by `buf build` next to the generated
 * code), loaded as a grpc-js package definition. Server reflection needs it: ts-proto's service
 * definitions carry no descriptors of their own.
 *
 * proto-loader derives each type's `fileDescriptorProtos` from protobufjs, which drops a file's
 * imports (`dependency`): reflection then served session_log.proto referring to
 * google.protobuf.Timestamp without importing it, and grpcurl and ghz refused it ("unresolvable
 * reference"; grpc/grpc-node#2958). So every entry carries buf's own file descriptors instead,
 * byte for byte, imports included; @grpc/reflection indexes them by file name and symbol.
 */
import { readFileSync } from "node:fs";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { loadFileDescriptorSetFromBuffer, type PackageDefinition } from "@grpc/proto-loader";

let cached: PackageDefinition | undefined;

export function loadPackageDefinition(): PackageDefinition {
  cached ??= load();
  return cached;
}

function load(): PackageDefinition {
  const set = readFileSync(new URL("./gen/metaharness.binpb", import.meta.url));
  const definition = loadFileDescriptorSetFromBuffer(set, {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const files = fromBinary(FileDescriptorSetSchema, set).file.map((f) => Buffer.from(toBinary(FileDescriptorProtoSchema, f)));
  for (const entry of Object.values(definition)) {
    if ("fileDescriptorProtos" in entry && Array.isArray(entry.fileDescriptorProtos)) entry.fileDescriptorProtos = files;
  }
  return definition;
}
