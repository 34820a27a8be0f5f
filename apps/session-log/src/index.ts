/**
 * The session-log service as a library: tests and the single-process `mh dev` start it in-process.
 */
export { startSessionLog, type SessionLogHandle } from "./app.js";
export { loadConfig, type SessionLogConfig } from "./config.js";
export { SESSION_EVENTS_TOPIC } from "@metaharness/events";
export { OUTBOX_SHARDS, shardOf } from "./store/shard.js";
export { OUTBOX_BATCH_SQL, OUTBOX_DELETE_AND_BATCH_SQL, readOutboxBatch, RELAY_BATCH_MAX_BYTES } from "./outbox/batch.js";
export { RELAY_SESSION_SETTINGS } from "./outbox/relay.js";
export { APPEND_SERIAL_SQL, APPEND_SQL, appendParams, MAX_ECHOED_BYTES, type AppendColumns } from "./store/append.js";
export { MAX_SLICE_BYTES, readStoredSlice, sliceStatement } from "./store/read.js";
export { EVENTS_CHANNEL } from "./watch/hub.js";
export { POLICY, ROLES, type Role } from "./auth/policy.js";
