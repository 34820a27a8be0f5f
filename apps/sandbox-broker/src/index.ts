/**
 * The sandbox broker as a library: tests and the single-process `mh dev` start it in-process.
 */
export { startSandboxBroker, RESTART_REASON, SHUTDOWN_REASON, type SandboxBrokerHandle, type StartOptions } from "./app.js";
export { loadConfig, type SandboxBrokerConfig } from "./config.js";
export { POLICY, ROLES, type Role } from "./auth/policy.js";
export { INTERRUPTED_OUTPUT } from "./db/calls.js";
export { NO_EVENTS, SessionLogSink, type SandboxEventSink } from "./events/sink.js";
export { TOOL_NAMES } from "./tools/index.js";
export { globToRegExp } from "./tools/glob-pattern.js";
export { startKvDevice, type KvDeviceHandle, type KvDeviceOptions } from "./examples/kv-device-hand.js";
// The workspace store's layout, for the workspaces benchmark to read a dir: store's snapshots.
export { decode as decodeManifest } from "./workspaces/manifest.js";
export { chunkKey } from "./workspaces/chunks.js";
