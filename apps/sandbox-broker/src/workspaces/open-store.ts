/**
 * Opens the workspace store MH_WORKSPACE_STORE names (dir:, s3:// or off). Settings that are
 * missing stop the broker with a clear message; a store that does not answer yet does not.
 */
import { MhError } from "@metaharness/errors";
import type { Logger } from "@metaharness/service-kit/logging";
import type { SandboxBrokerConfig } from "../config.js";
import type { BlobStore } from "./blob-store.js";
import { DirStore } from "./dir-store.js";
import { S3Store } from "./s3-store.js";
import type { Retention } from "./retention.js";
import type { Snapshots } from "./snapshots.js";

/** A broker's workspace snapshots and their retention, when MH_WORKSPACE_STORE is on. */
export interface Workspaces {
  readonly snapshots: Snapshots;
  readonly retention: Retention;
}

export interface OpenedStore {
  readonly store: BlobStore;
  close(): void;
}

export async function openWorkspaceStore(config: SandboxBrokerConfig, logger: Logger): Promise<OpenedStore | undefined> {
  const spec = config.workspaceStore;
  if (spec === "off") return undefined;
  if (spec.startsWith("dir:")) {
    const store = new DirStore(spec.slice("dir:".length));
    await store.open();
    return { store, close: () => undefined };
  }
  const [bucket = "", ...rest] = spec.slice("s3://".length).split("/");
  const prefix = rest.filter((p) => p !== "").join("/");
  const { workspaceS3Endpoint: endpoint, workspaceS3AccessKeyId: accessKeyId, workspaceS3SecretAccessKey: secretAccessKey } = config;
  if (endpoint === undefined || accessKeyId === undefined || secretAccessKey === undefined) {
    throw new MhError(
      "FAILED_PRECONDITION",
      "MH_WORKSPACE_STORE=s3://... needs MH_WORKSPACE_S3_ENDPOINT, MH_WORKSPACE_S3_ACCESS_KEY_ID and MH_WORKSPACE_S3_SECRET_ACCESS_KEY",
    );
  }
  const store = new S3Store({
    bucket,
    prefix: prefix === "" ? "" : `${prefix}/`,
    endpoint,
    region: config.workspaceS3Region,
    accessKeyId,
    secretAccessKey,
    timeoutMs: config.workspaceStoreTimeoutMs,
  });
  // A store that is down does not keep the broker from starting: snapshots fail (a note in each
  // call's result) until it answers, and the first write makes the bucket.
  await store.open().catch((err: unknown) => logger.warn({ err, store: store.description }, "the workspace store does not answer; snapshots resume once it does"));
  return { store, close: () => store.close() };
}
