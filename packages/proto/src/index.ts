/**
 * The wire contracts of Meta-Harness, generated from /proto by ts-proto (see buf.gen.yaml).
 * Everything under ./gen is generated: change the .proto files and run `npm run generate`.
 */
export * from "./gen/metaharness/v1/content.js";
export * from "./gen/metaharness/v1/event.js";
export * from "./gen/metaharness/v1/session_log.js";
export * from "./gen/metaharness/v1/harness.js";
export * from "./gen/metaharness/v1/sandbox_broker.js";
export * from "./gen/metaharness/v1/layers.js";
export * from "./gen/metaharness/v1/workspaces.js";
export * from "./gen/metaharness/v1/credential_vault_proxy.js";
export { protobufPackage, protobufFileName, type DeepPartial, type Exact, type MessageFns } from "./gen/metaharness/v1/event.js";
export { Timestamp } from "./gen/google/protobuf/timestamp.js";
export { Struct, Value, ListValue } from "./gen/google/protobuf/struct.js";
export { contractDescriptorSet, loadHealthPackageDefinition, loadPackageDefinition } from "./descriptor.js";
export { readTraceContext } from "./envelope.js";
export { unsafeIntegerField } from "./unsafe-integers.js";
export { wireFault } from "./wire-faults.js";
export { externalDriver, isExternalDriver } from "./sandbox-driver.js";
