/**
 * The workspace store in an S3-compatible object store (MH_WORKSPACE_STORE=s3://bucket/prefix,
 * with MH_WORKSPACE_S3_ENDPOINT and keys): for brokers on several machines, where a session's
 * next sandbox may start on another one. Tested against SeaweedFS's S3 gateway
 * (infra/seaweedfs). Path-style addressing (what SeaweedFS and most self-hosted stores serve), and
 * every request bounded by a timeout: a store that does not answer is UNAVAILABLE, never a hang.
 */
import {
  CreateBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import type { BlobStore, StoredObject } from "./blob-store.js";
import { unavailable } from "./dir-store.js";

export interface S3StoreOptions {
  readonly bucket: string;
  /** Prepended to every key ("" or ending in "/"). */
  readonly prefix: string;
  readonly endpoint: string;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** One request, whole: past it the store is UNAVAILABLE. */
  readonly timeoutMs: number;
}

/** DeleteObjects takes at most this many keys a request. */
const DELETE_BATCH = 1000;

export class S3Store implements BlobStore {
  readonly description: string;
  private readonly client: S3Client;

  constructor(private readonly opts: S3StoreOptions) {
    this.description = `s3://${opts.bucket}/${opts.prefix} at ${opts.endpoint}`;
    this.client = new S3Client({
      endpoint: opts.endpoint,
      region: opts.region,
      forcePathStyle: true,
      credentials: { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey },
      // The SDK's own retries would stretch a dead store's answer well past the timeout.
      maxAttempts: 1,
    });
  }

  /** Makes the bucket if it is not there. */
  async open(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.opts.bucket }), this.signal());
    } catch (err) {
      if (!(err instanceof S3ServiceException) || err.$metadata.httpStatusCode !== 404) throw unavailable(this.description, err);
      await this.client.send(new CreateBucketCommand({ Bucket: this.opts.bucket }), this.signal()).catch((e: unknown) => {
        // Another broker made it meanwhile.
        if (!(e instanceof S3ServiceException && /BucketAlready/.test(e.name))) throw unavailable(this.description, e);
      });
    }
  }

  async put(key: string, body: Buffer): Promise<void> {
    const put = (): Promise<unknown> =>
      this.client.send(new PutObjectCommand({ Bucket: this.opts.bucket, Key: this.opts.prefix + key, Body: body }), this.signal());
    try {
      await put().catch(async (err: unknown) => {
        // The store was down when the broker started, so open() could not make the bucket.
        if (!(err instanceof S3ServiceException && err.name === "NoSuchBucket")) throw err;
        await this.open();
        await put();
      });
    } catch (err) {
      throw unavailable(this.description, err);
    }
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.opts.bucket, Key: this.opts.prefix + key }), this.signal());
      if (res.Body === undefined) return Buffer.alloc(0);
      return Buffer.from(await res.Body.transformToByteArray());
    } catch (err) {
      if (notFound(err)) return undefined;
      throw unavailable(this.description, err);
    }
  }

  async has(key: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.opts.bucket, Key: this.opts.prefix + key }), this.signal());
      return true;
    } catch (err) {
      if (notFound(err)) return false;
      throw unavailable(this.description, err);
    }
  }

  async list(prefix: string): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    let token: string | undefined;
    try {
      do {
        const res = await this.client.send(
          new ListObjectsV2Command({ Bucket: this.opts.bucket, Prefix: this.opts.prefix + prefix, ContinuationToken: token }),
          this.signal(),
        );
        for (const o of res.Contents ?? []) {
          if (o.Key === undefined) continue;
          out.push({ key: o.Key.slice(this.opts.prefix.length), size: o.Size ?? 0, modifiedAt: o.LastModified ?? new Date(0) });
        }
        token = res.IsTruncated === true ? res.NextContinuationToken : undefined;
      } while (token !== undefined);
    } catch (err) {
      throw unavailable(this.description, err);
    }
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async delete(keys: readonly string[]): Promise<void> {
    try {
      for (let i = 0; i < keys.length; i += DELETE_BATCH) {
        const batch = keys.slice(i, i + DELETE_BATCH);
        const res = await this.client.send(
          new DeleteObjectsCommand({
            Bucket: this.opts.bucket,
            Delete: { Objects: batch.map((k) => ({ Key: this.opts.prefix + k })), Quiet: true },
          }),
          this.signal(),
        );
        const failed = (res.Errors ?? []).filter((e) => e.Code !== "NoSuchKey");
        if (failed.length > 0) throw new Error(`${failed.length} objects not deleted, first ${failed[0]?.Key}: ${failed[0]?.Message}`);
      }
    } catch (err) {
      throw unavailable(this.description, err);
    }
  }

  close(): void {
    this.client.destroy();
  }

  private signal(): { abortSignal: AbortSignal } {
    return { abortSignal: AbortSignal.timeout(this.opts.timeoutMs) };
  }
}

function notFound(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.$metadata.httpStatusCode === 404 || err.name === "NoSuchKey" || err.name === "NotFound");
}
